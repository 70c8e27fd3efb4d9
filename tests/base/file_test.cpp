// read_file: bytes back exactly as written; every failure names the path.
#include "base/file.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <random>
#include <string>

#include "base/error.h"

namespace vtllm {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = fs::temp_directory_path() / ("vtllm_file_test_" + std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void write(const fs::path& p, const std::string& bytes) {
  FILE* f = std::fopen(p.c_str(), "wb");
  ASSERT_NE(f, nullptr) << p;
  ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  std::fclose(f);
}

void expect_error_naming(const fs::path& p, const std::string& problem) {
  try {
    read_file(p);
    FAIL() << "read_file(" << p << ") did not throw";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(p.string()), std::string::npos) << what;
    EXPECT_NE(what.find(problem), std::string::npos) << what;
  }
}

TEST(ReadFile, ReturnsEveryByteAsWritten) {
  TempDir dir;
  std::mt19937 rng(3);
  for (size_t n : {size_t(0), size_t(1), size_t(4095), size_t(1 << 20) + 7}) {
    std::string bytes(n, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());  // NULs, \r\n, invalid UTF-8 included
    const fs::path p = dir.path() / ("f" + std::to_string(n));
    write(p, bytes);
    EXPECT_EQ(read_file(p), bytes) << n << " bytes";
  }
}

TEST(ReadFile, AMissingFileIsAnErrorNamingThePath) {
  TempDir dir;
  expect_error_naming(dir.path() / "absent.json", "cannot open");
}

TEST(ReadFile, ADirectoryIsAnErrorNamingThePath) {
  TempDir dir;
  expect_error_naming(dir.path(), "is a directory");
}

}  // namespace
}  // namespace vtllm
