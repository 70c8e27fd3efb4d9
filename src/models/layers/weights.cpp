#include "models/layers/weights.h"

#include <algorithm>

#include "base/error.h"
#include "vt/ops/copy.h"

namespace vtllm::models {

WeightStore::WeightStore(const io::ModelConfig& config, const std::string& dir, vt::Stream& s)
    : ckpt_(io::Checkpoint::open(dir)),
      specs_(io::param_specs(config, io::ParamSpecOptions{.language_model_only = true})),
      prefix_(io::language_model_prefix(config)),
      stream_(s) {}

vt::Tensor WeightStore::get(const std::string& name, const vt::Shape& shape) {
  const std::string where = ckpt_.dir() + ": tensor '" + name + "'";
  auto spec = std::find_if(specs_.begin(), specs_.end(),
                           [&](const io::ParamSpec& p) { return p.name == name; });
  VT_CHECK(spec != specs_.end(), where, " is not a parameter of this model class");
  VT_CHECK(spec->shape == shape, where, " is expected with shape ", vt::shape_str(spec->shape),
           " by the config but ", vt::shape_str(shape), " by the layer");
  const io::Checkpoint::Entry* e = ckpt_.find(name);
  VT_CHECK(e != nullptr, where, " is missing from the checkpoint");
  const io::SafetensorsTensor& t = *e->tensor;
  VT_CHECK(t.shape == shape, where, " has shape ", vt::shape_str(t.shape), ", expected ",
           vt::shape_str(shape));
  VT_CHECK(t.dtype.has_value() && vt::is_floating(*t.dtype), where, " has dtype ", t.st_dtype,
           ", which is not a float type vtllm can hold");
  std::shared_ptr<void> keep = std::const_pointer_cast<io::MappedFile>(e->file->mapping());
  vt::Tensor raw = vt::Tensor::from_blob(const_cast<uint8_t*>(e->file->data(t)), shape, *t.dtype,
                                         vt::Device::cpu(), keep);
  used_.insert(name);
  // A contiguous f32 copy (never a view of the mapping: the kernels may write in place).
  vt::Tensor out = vt::Tensor::empty(shape, vt::DType::kF32);
  vt::copy(stream_, raw, out);
  return out;
}

void WeightStore::check_all_used() const {
  for (const io::ParamSpec& p : specs_)
    VT_CHECK(used_.count(p.name) == 1, ckpt_.dir(), ": parameter '", p.name,
             "' is expected by the config but no layer of the model uses it");
}

}  // namespace vtllm::models
