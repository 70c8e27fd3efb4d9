#include "io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "base/error.h"

namespace vtllm::io {

namespace {

using nlohmann::json;

struct StDType {
  const char* name;
  size_t itemsize;
  std::optional<vt::DType> dtype;
};

// Every byte-sized element type the safetensors format defines.
const StDType kStDTypes[] = {
    {"BOOL", 1, std::nullopt},         {"U8", 1, vt::DType::kU8},
    {"I8", 1, vt::DType::kI8},         {"F8_E5M2", 1, std::nullopt},
    {"F8_E4M3", 1, vt::DType::kF8E4M3}, {"F8_E8M0", 1, std::nullopt},
    {"I16", 2, std::nullopt},          {"U16", 2, std::nullopt},
    {"F16", 2, vt::DType::kF16},       {"BF16", 2, vt::DType::kBF16},
    {"I32", 4, vt::DType::kI32},       {"U32", 4, std::nullopt},
    {"F32", 4, vt::DType::kF32},       {"I64", 8, vt::DType::kI64},
    {"U64", 8, std::nullopt},          {"F64", 8, std::nullopt},
};

const StDType* find_st_dtype(const std::string& name) {
  for (const StDType& d : kStDTypes)
    if (name == d.name) return &d;
  return nullptr;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Parses the JSON, refusing duplicate top-level names (nlohmann would keep the last).
json parse_json_no_duplicates(std::string_view text, std::string_view file_name) {
  std::set<std::string> seen;
  std::string duplicate;
  auto cb = [&](int depth, json::parse_event_t ev, json& parsed) {
    if (ev == json::parse_event_t::key && depth == 1 && duplicate.empty()) {
      std::string key = parsed.get<std::string>();
      if (!seen.insert(key).second) duplicate = key;
    }
    return true;
  };
  json j;
  try {
    j = json::parse(text.begin(), text.end(), cb);
  } catch (const json::exception& e) {
    VT_THROW(file_name, ": malformed header JSON: ", e.what());
  }
  if (!duplicate.empty()) VT_THROW(file_name, ": tensor '", duplicate, "' appears twice in the header");
  return j;
}

SafetensorsTensor parse_entry(const std::string& name, const json& v, std::string_view file_name) {
  auto bad = [&](const std::string& what) -> Error {
    return Error(str_cat(file_name, ": tensor '", name, "': ", what));
  };
  if (!v.is_object()) throw bad("entry is not a JSON object");
  SafetensorsTensor t;
  t.name = name;

  auto dt = v.find("dtype");
  if (dt == v.end() || !dt->is_string()) throw bad("missing string field 'dtype'");
  t.st_dtype = dt->get<std::string>();
  const StDType* d = find_st_dtype(t.st_dtype);
  if (!d) throw bad(str_cat("unknown dtype '", t.st_dtype, "'"));
  t.dtype = d->dtype;
  t.itemsize = d->itemsize;

  auto sh = v.find("shape");
  if (sh == v.end() || !sh->is_array()) throw bad("missing array field 'shape'");
  for (const json& dim : *sh) {
    if (!dim.is_number_unsigned()) throw bad(str_cat("shape entry ", dim.dump(), " is not a non-negative integer"));
    uint64_t x = dim.get<uint64_t>();
    if (x > uint64_t(INT64_MAX)) throw bad(str_cat("shape entry ", x, " is too large"));
    t.shape.push_back(int64_t(x));
  }

  auto off = v.find("data_offsets");
  if (off == v.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
      !(*off)[1].is_number_unsigned())
    throw bad("'data_offsets' must be [begin, end] with non-negative integers");
  t.begin = (*off)[0].get<uint64_t>();
  t.end = (*off)[1].get<uint64_t>();
  if (t.end < t.begin) throw bad(str_cat("data_offsets [", t.begin, ", ", t.end, "] end before begin"));

  // shape x itemsize == end - begin, computed without overflow.
  unsigned __int128 bytes = t.itemsize;
  for (int64_t dim : t.shape) {
    bytes *= uint64_t(dim);
    if (bytes > (unsigned __int128)UINT64_MAX) throw bad(str_cat("shape ", shape_str(t.shape), " is too large"));
  }
  if (uint64_t(bytes) != t.end - t.begin)
    throw bad(str_cat("shape ", shape_str(t.shape), " of ", t.st_dtype, " needs ", uint64_t(bytes),
                      " bytes but data_offsets [", t.begin, ", ", t.end, "] hold ", t.end - t.begin));
  return t;
}

}  // namespace

int64_t SafetensorsTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

const char* safetensors_dtype_name(vt::DType t) {
  for (const StDType& d : kStDTypes)
    if (d.dtype == t) return d.name;
  VT_THROW("dtype ", vt::dtype_name(t), " has no safetensors spelling");
}

SafetensorsHeader parse_safetensors_header(std::string_view prefix, uint64_t file_size,
                                           std::string_view file_name) {
  if (file_size < 8 || prefix.size() < 8)
    VT_THROW(file_name, ": file is ", file_size, " bytes, too short for the 8-byte header length (truncated?)");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | uint8_t(prefix[size_t(i)]);
  if (n > file_size - 8)
    VT_THROW(file_name, ": header length ", n, " runs past the end of the file (", file_size,
             " bytes; truncated?)");
  if (n > kMaxSafetensorsHeaderBytes)
    VT_THROW(file_name, ": header length ", n, " exceeds the limit of ", kMaxSafetensorsHeaderBytes, " bytes");
  if (prefix.size() < 8 + n)
    VT_THROW(file_name, ": only ", prefix.size(), " bytes given for a header of ", n);
  std::string_view text = prefix.substr(8, size_t(n));
  if (text.empty() || text[0] != '{') VT_THROW(file_name, ": header does not start with a JSON object '{'");

  json j = parse_json_no_duplicates(text, file_name);
  if (!j.is_object()) VT_THROW(file_name, ": header is not a JSON object");

  SafetensorsHeader h;
  h.data_start = 8 + n;
  const uint64_t data_size = file_size - h.data_start;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it.value().is_object()) VT_THROW(file_name, ": '__metadata__' is not a JSON object");
      for (auto m = it.value().begin(); m != it.value().end(); ++m) {
        if (!m.value().is_string())
          VT_THROW(file_name, ": '__metadata__' value of '", m.key(), "' is not a string");
        h.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    SafetensorsTensor t = parse_entry(it.key(), it.value(), file_name);
    if (t.end > data_size)
      VT_THROW(file_name, ": tensor '", t.name, "': data_offsets [", t.begin, ", ", t.end,
               "] run past the end of the data (", data_size, " bytes; truncated?)");
    h.tensors.push_back(std::move(t));
  }

  std::sort(h.tensors.begin(), h.tensors.end(), [](const auto& a, const auto& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const SafetensorsTensor* prev = nullptr;
  for (const SafetensorsTensor& t : h.tensors) {
    if (t.begin == t.end) continue;  // empty tensors occupy no bytes
    if (prev && prev->end > t.begin)
      VT_THROW(file_name, ": tensors '", prev->name, "' [", prev->begin, ", ", prev->end, ") and '",
               t.name, "' [", t.begin, ", ", t.end, ") overlap");
    prev = &t;
  }
  return h;
}

SafetensorsFile::SafetensorsFile(std::shared_ptr<const MappedFile> map, SafetensorsHeader header)
    : map_(std::move(map)), header_(std::move(header)) {
  for (size_t i = 0; i < header_.tensors.size(); ++i) index_.emplace(header_.tensors[i].name, i);
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  auto map = MappedFile::open(path);
  std::string_view bytes(reinterpret_cast<const char*>(map->data()), map->size());
  SafetensorsHeader header = parse_safetensors_header(bytes, map->size(), path);
  return SafetensorsFile(std::move(map), std::move(header));
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &header_.tensors[it->second];
}

const uint8_t* SafetensorsFile::data(const SafetensorsTensor& t) const {
  return map_->data() + header_.data_start + t.begin;
}

}  // namespace vtllm::io
