// A checkpoint directory: one `model.safetensors`, or several shards listed by
// `model.safetensors.index.json` ({"weight_map": {"tensor": "shard file", ...}}).
//
// Opening maps every shard and validates every header (safetensors.h). With an
// index, every listed shard must exist, every listed tensor must be in the shard
// the index names, and a tensor in a shard but absent from the index is an error
// (the index is what transformers trusts). Errors name the file and the tensor.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/safetensors.h"

namespace vtllm::io {

class Checkpoint {
 public:
  // `dir` holds model.safetensors.index.json or model.safetensors.
  static Checkpoint open(const std::string& dir);
  // True when `dir` has a safetensors checkpoint (either form).
  static bool exists(const std::string& dir);

  struct Entry {
    const SafetensorsFile* file;
    const SafetensorsTensor* tensor;
  };

  // Every tensor of every shard, by name.
  const std::map<std::string, Entry, std::less<>>& tensors() const { return tensors_; }
  const Entry* find(std::string_view name) const;
  const std::vector<std::unique_ptr<SafetensorsFile>>& shards() const { return shards_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> shards_;
  std::map<std::string, Entry, std::less<>> tensors_;
};

}  // namespace vtllm::io
