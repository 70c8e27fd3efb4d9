#include "vt/dtype.h"

#include "base/error.h"

namespace vt {

namespace {
struct DTypeInfo {
  DType type;
  const char* name;
  size_t size;
  bool floating;
};
constexpr DTypeInfo kInfo[] = {
    {DType::kF32, "f32", 4, true},     {DType::kF16, "f16", 2, true},
    {DType::kBF16, "bf16", 2, true},   {DType::kF8E4M3, "f8e4m3", 1, true},
    {DType::kI8, "i8", 1, false},      {DType::kI32, "i32", 4, false},
    {DType::kI64, "i64", 8, false},    {DType::kU8, "u8", 1, false},
};
const DTypeInfo& info(DType t) {
  size_t i = size_t(t);
  VT_CHECK(i < std::size(kInfo), "unknown vt::DType value ", i);
  return kInfo[i];
}
}  // namespace

size_t dtype_size(DType t) { return info(t).size; }
const char* dtype_name(DType t) { return info(t).name; }
bool is_floating(DType t) { return info(t).floating; }

DType dtype_from_name(std::string_view name) {
  for (const DTypeInfo& d : kInfo)
    if (name == d.name) return d.type;
  VT_THROW("unknown dtype '", name, "' (expected f32, f16, bf16, f8e4m3, i8, i32, i64 or u8)");
}

}  // namespace vt
