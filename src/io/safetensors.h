// safetensors: the header parser and a validated, memory-mapped file.
//
// Format: an 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]}, ...,
//  "__metadata__": {"k": "v"}}, then the data; offsets are relative to byte 8 + N.
//
// parse_safetensors_header() accepts a header only when every rule holds: N fits
// in the file (and under 100 MB, the reference implementation's bound), the JSON is
// well formed with no duplicate names, every dtype is one safetensors defines,
// shape x itemsize == end - begin, every range lies inside the data, and no two
// tensors overlap. Each violation is a vtllm::Error naming the file, the tensor and
// the problem. A dtype that safetensors defines but vt cannot hold (F64, BOOL, ...)
// parses (so the file can be inspected) and is refused when the tensor is loaded.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/mapped_file.h"
#include "vt/dtype.h"

namespace vtllm::io {

struct SafetensorsTensor {
  std::string name;
  std::string st_dtype;            // the file's spelling: "BF16", "F32", "F8_E4M3", ...
  std::optional<vt::DType> dtype;  // empty when vt has no such element type
  size_t itemsize = 0;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte range relative to the start of the data section

  int64_t numel() const;
};

struct SafetensorsHeader {
  std::vector<SafetensorsTensor> tensors;  // in file (offset) order
  std::map<std::string, std::string> metadata;
  uint64_t data_start = 0;  // 8 + N: absolute offset of the data section
};

// The largest header accepted (bytes of JSON).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

// Parses and validates the header of a safetensors file whose first bytes are
// `prefix` (at least the whole header) and whose total size is `file_size`.
// `file_name` only labels errors.
SafetensorsHeader parse_safetensors_header(std::string_view prefix, uint64_t file_size,
                                           std::string_view file_name);

// The safetensors dtype spelling for a vt dtype ("BF16" for kBF16).
const char* safetensors_dtype_name(vt::DType t);

// A mapped, validated safetensors file. Thread-safe for reads.
class SafetensorsFile {
 public:
  static SafetensorsFile open(const std::string& path);

  const std::string& path() const { return map_->path(); }
  const SafetensorsHeader& header() const { return header_; }
  const std::vector<SafetensorsTensor>& tensors() const { return header_.tensors; }
  // nullptr when the file has no tensor of that name.
  const SafetensorsTensor* find(std::string_view name) const;
  // The tensor's bytes inside the mapping (valid while mapping() is alive).
  const uint8_t* data(const SafetensorsTensor& t) const;
  const std::shared_ptr<const MappedFile>& mapping() const { return map_; }

 private:
  SafetensorsFile(std::shared_ptr<const MappedFile> map, SafetensorsHeader header);

  std::shared_ptr<const MappedFile> map_;
  SafetensorsHeader header_;
  std::map<std::string, size_t, std::less<>> index_;
};

}  // namespace vtllm::io
