#include "models/params.h"

#include "base/error.h"

namespace vtllm::models {

vt::Tensor ParamDeclaration::take(const std::string& name, const vt::Shape& shape) {
  VT_CHECK(names_.insert(name).second, "parameter '", name, "' is declared by two layers");
  int64_t n = 1;
  for (int64_t d : shape)
    VT_CHECK(d >= 0 && !__builtin_mul_overflow(n, d, &n), "parameter '", name, "' has shape ",
             vt::shape_str(shape), ": too many elements");
  specs_.push_back({name, shape, dtype_});
  return {};
}

vt::Tensor ParamDeclaration::take_stacked(const std::vector<Part>& parts, int64_t cols) {
  for (const Part& p : parts) take(p.name, {p.rows, cols});
  return {};
}

}  // namespace vtllm::models
