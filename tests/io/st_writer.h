// Test helper: writes safetensors files byte by byte (independent of the reader
// under test), plus temporary directories. Header-only: tests/io globs *_test.cpp.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace vtllm::io::testing {

struct StTensor {
  std::string name;
  std::string dtype;  // safetensors spelling
  std::vector<int64_t> shape;
  std::string bytes;  // raw little-endian element bytes
};

inline std::string shape_json(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

// A whole file from a header JSON text and the data bytes; the header is padded
// with spaces to a multiple of 8 bytes, as the Python writer does.
inline std::string safetensors_from_parts(std::string header, const std::string& data, bool pad = true) {
  while (pad && header.size() % 8) header += ' ';
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[size_t(i)] = char((n >> (8 * i)) & 0xff);
  return out + header + data;
}

// The header JSON and data of tensors laid out back to back in the given order.
inline std::string safetensors_bytes(const std::vector<StTensor>& tensors,
                                     const std::string& metadata_json = "") {
  std::string header = "{";
  std::string data;
  if (!metadata_json.empty()) header += "\"__metadata__\":" + metadata_json;
  for (const StTensor& t : tensors) {
    if (header.size() > 1) header += ",";
    uint64_t begin = data.size();
    data += t.bytes;
    header += "\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":" + shape_json(t.shape) +
              ",\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(data.size()) + "]}";
  }
  return safetensors_from_parts(header + "}", data);
}

inline std::string random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = char(rng() & 0xff);
  return s;
}

// Float values as f32 / bf16 (truncation is fine: the test compares what it wrote).
inline std::string f32_bytes(const std::vector<float>& v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

inline void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

// A fresh directory removed at scope exit.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("vtllm_io_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace vtllm::io::testing
