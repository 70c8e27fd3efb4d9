#include "models/layers/weights.h"

#include "base/error.h"
#include "io/param_specs.h"

namespace vtllm::models {

namespace {
io::LoadOptions language_model(io::LoadOptions o) {
  o.language_model_only = true;  // vision towers are not built yet
  return o;
}
}  // namespace

WeightStore::WeightStore(const io::ModelConfig& config, const std::string& dir, vt::Stream& s,
                         const io::LoadOptions& options)
    : dir_(options.format == io::LoadFormat::kDummy ? dir + " (dummy weights)" : dir),
      weights_(io::load_model_weights(s, dir, config, language_model(options))),
      prefix_(io::language_model_prefix(config)),
      stream_(s),
      device_(options.device) {}

vt::Tensor WeightStore::take(const std::string& name, const vt::Shape& shape) {
  const std::string where = dir_ + ": parameter '" + name + "'";
  VT_CHECK(taken_.count(name) == 0, where, " is taken by two layers");
  auto it = weights_.tensors.find(name);
  VT_CHECK(it != weights_.tensors.end(), where, " is not a parameter of this model class");
  VT_CHECK(it->second.shape() == shape, where, " has shape ", vt::shape_str(it->second.shape()),
           " but the layer expects ", vt::shape_str(shape));
  vt::Tensor t = std::move(it->second);
  weights_.tensors.erase(it);
  taken_.insert(name);
  return t;
}

void WeightStore::check_all_used() const {
  if (!weights_.tensors.empty())
    VT_THROW(dir_, ": parameter '", weights_.tensors.begin()->first,
             "' is expected by the config but no layer of the model uses it");
}

}  // namespace vtllm::models
