#include "io/checkpoint.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/file.h"

namespace vtllm::io {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kIndexName = "model.safetensors.index.json";
constexpr const char* kSingleName = "model.safetensors";

// weight_map of the index: tensor name -> shard file name.
std::map<std::string, std::string> read_weight_map(const fs::path& index_path) {
  const std::string name = index_path.string();
  json j;
  try {
    j = json::parse(read_file(index_path));
  } catch (const json::exception& e) {
    VT_THROW(name, ": malformed JSON: ", e.what());
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    VT_THROW(name, ": missing object field 'weight_map'");
  std::map<std::string, std::string> out;
  for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
    if (!it.value().is_string()) VT_THROW(name, ": weight_map entry '", it.key(), "' is not a file name");
    std::string shard = it.value().get<std::string>();
    if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..")
      VT_THROW(name, ": weight_map entry '", it.key(), "' names '", shard,
               "', which is not a file in the checkpoint directory");
    out[it.key()] = shard;
  }
  return out;
}

}  // namespace

bool Checkpoint::exists(const std::string& dir) {
  return fs::exists(fs::path(dir) / kIndexName) || fs::exists(fs::path(dir) / kSingleName);
}

Checkpoint Checkpoint::open(const std::string& dir) {
  Checkpoint ck;
  ck.dir_ = dir;
  const fs::path root(dir);
  auto add_shard = [&](const std::string& file) -> const SafetensorsFile* {
    const fs::path p = root / file;
    if (!fs::exists(p)) VT_THROW(p.string(), ": shard is missing (listed in ", kIndexName, ")");
    ck.shards_.push_back(std::make_unique<SafetensorsFile>(SafetensorsFile::open(p.string())));
    return ck.shards_.back().get();
  };

  if (fs::exists(root / kIndexName)) {
    const auto weight_map = read_weight_map(root / kIndexName);
    std::map<std::string, const SafetensorsFile*> by_file;
    for (const auto& [tensor, file] : weight_map)
      if (!by_file.count(file)) by_file[file] = add_shard(file);
    for (const auto& [tensor, file] : weight_map) {
      const SafetensorsFile* f = by_file[file];
      const SafetensorsTensor* t = f->find(tensor);
      if (!t) VT_THROW(f->path(), ": tensor '", tensor, "' is listed in ", kIndexName, " but not in this shard");
      ck.tensors_.emplace(tensor, Entry{f, t});
    }
    for (const auto& f : ck.shards_)
      for (const SafetensorsTensor& t : f->tensors())
        if (!weight_map.count(t.name))
          VT_THROW(f->path(), ": tensor '", t.name, "' is not listed in ", kIndexName);
  } else if (fs::exists(root / kSingleName)) {
    const SafetensorsFile* f = add_shard(kSingleName);
    for (const SafetensorsTensor& t : f->tensors()) ck.tensors_.emplace(t.name, Entry{f, &t});
  } else {
    VT_THROW(dir, ": no ", kSingleName, " or ", kIndexName, " in this directory");
  }
  return ck;
}

const Checkpoint::Entry* Checkpoint::find(std::string_view name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

}  // namespace vtllm::io
