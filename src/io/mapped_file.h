// A read-only memory mapping of a whole file.
//
// Checkpoint tensors on the CPU are views into this mapping (zero copy), so it is
// held by shared_ptr: every tensor made from it keeps the mapping alive. The bytes
// are never written (PROT_READ, MAP_PRIVATE). An empty file maps to size 0 and a
// null data pointer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace vtllm::io {

class MappedFile {
 public:
  // Maps `path`; throws vtllm::Error naming the path and the system error.
  static std::shared_ptr<const MappedFile> open(const std::string& path);

  struct Key {  // only open() can construct (make_shared needs a public constructor)
   private:
    Key() = default;
    friend class MappedFile;
  };
  MappedFile(Key, std::string path, const uint8_t* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_;
  size_t size_;
};

}  // namespace vtllm::io
