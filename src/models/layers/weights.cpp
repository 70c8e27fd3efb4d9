#include "models/layers/weights.h"

#include "base/error.h"
#include "vt/ops/copy.h"

namespace vtllm::models {

WeightStore::WeightStore(io::Weights weights, std::string label, vt::Stream& s)
    : label_(std::move(label)), weights_(std::move(weights)), stream_(s) {}

vt::Tensor WeightStore::take(const std::string& name, const vt::Shape& shape) {
  const std::string where = label_ + ": parameter '" + name + "'";
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

vt::Tensor WeightStore::take_stacked(const std::vector<Part>& parts, int64_t cols) {
  VT_CHECK(!parts.empty(), label_, ": take_stacked needs at least one parameter");
  std::vector<vt::Tensor> taken;
  int64_t rows = 0;
  for (const Part& p : parts) {
    taken.push_back(take(p.name, {p.rows, cols}));
    VT_CHECK(taken.back().dtype() == taken.front().dtype(), label_, ": parameter '", p.name, "' is ",
             taken.back().str(), " but '", parts.front().name, "' is ", taken.front().str(),
             ": projections stacked into one weight need one dtype");
    rows += p.rows;
  }
  vt::Tensor out = vt::Tensor::empty({rows, cols}, taken.front().dtype(), stream_.device());
  int64_t row = 0;
  for (const vt::Tensor& t : taken) {
    vt::Tensor dst = out.slice(0, row, row + t.size(0));
    vt::copy(stream_, t, dst);
    row += t.size(0);
  }
  stream_.synchronize();  // the copies read the originals, which die on return
  return out;
}

void WeightStore::check_all_used() const {
  if (!weights_.tensors.empty())
    VT_THROW(label_, ": parameter '", weights_.tensors.begin()->first,
             "' is expected by the config but no layer of the model uses it");
}

}  // namespace vtllm::models
