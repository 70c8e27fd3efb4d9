#include "engine/mm_embedder.h"

#include <cstring>
#include <vector>

#include "base/error.h"
#include "vt/ops/copy.h"

namespace vtllm::engine {
namespace {

BlockHash hash_of(const multimodal::VisionInput& v) { return {v.hash[0], v.hash[1]}; }

}  // namespace

models::InputEmbeddings MmEmbedder::embed(vt::Stream& s, const StepPlan& plan) {
  for (const BlockHash& h : plan.encoder_frees) features_.erase(h);

  // Items to encode: the scheduled ones, and any the plan reads that are not cached (the
  // scheduler's book and this cache agree unless a scheduled step never ran).
  std::vector<std::shared_ptr<const multimodal::VisionInput>> todo;
  std::vector<BlockHash> todo_hashes;
  auto want = [&](const std::shared_ptr<const multimodal::VisionInput>& v) {
    const BlockHash h = hash_of(*v);
    if (features_.contains(h)) return;
    for (const BlockHash& t : todo_hashes)
      if (t == h) return;
    todo.push_back(v);
    todo_hashes.push_back(h);
  };
  for (const auto& v : plan.encoder_inputs) want(v);
  for (const EmbedSlice& e : plan.embeds) want(e.input);

  if (!todo.empty()) {
    const int64_t dim = tower_.patch_dim(), merge2 = tower_.merge_size() * tower_.merge_size();
    int64_t rows = 0;
    std::vector<models::VisionGrid> grids;
    for (const auto& v : todo) {
      VT_CHECK(v->patch_dim == dim && int64_t(v->pixel_values.size()) == v->num_patches() * dim,
               "vision encoder: an item of grid (", v->grid_t, ", ", v->grid_h, ", ", v->grid_w,
               ") has ", v->pixel_values.size(), " pixel values of patch_dim ", v->patch_dim,
               ", the tower reads ", v->num_patches(), " x ", dim);
      grids.push_back({v->grid_t, v->grid_h, v->grid_w});
      rows += v->num_patches();
    }
    if (todo.size() == 1) {
      // The tower reads one item's rows where they are (no copy on the engine thread).
      pixels_ = vt::Tensor::from_blob(const_cast<float*>(todo[0]->pixel_values.data()), {rows, dim},
                                      vt::DType::kF32, vt::Device::cpu(),
                                      std::const_pointer_cast<multimodal::VisionInput>(todo[0]));
    } else {
      pixels_ = vt::Tensor::empty({rows, dim}, vt::DType::kF32, vt::Device::cpu());
      float* dst = pixels_.data<float>();
      for (const auto& v : todo) {
        std::memcpy(dst, v->pixel_values.data(), v->pixel_values.size() * sizeof(float));
        dst += v->pixel_values.size();
      }
    }
    const vt::Tensor out = tower_.encode(s, pixels_, grids);
    VT_CHECK(out.defined() && out.dim() == 2 && out.size(0) == rows / merge2 &&
                 out.size(1) == tower_.out_hidden(),
             "vision encoder: returned ", out.defined() ? out.str() : "(none)", " for ", rows,
             " patches (expected [", rows / merge2, ", ", tower_.out_hidden(), "])");
    int64_t at = 0;
    for (size_t i = 0; i < todo.size(); ++i) {
      const int64_t n = todo[i]->num_patches() / merge2;
      vt::Tensor f = out.slice(0, at, at + n);
      if (todo.size() > 1) {  // its own storage, so evicting one item frees its memory
        vt::Tensor own = vt::Tensor::empty({n, out.size(1)}, out.dtype(), out.device());
        vt::copy(s, f, own);
        f = own;
      }
      features_[todo_hashes[i]] = f;
      at += n;
    }
    num_encoded_ += int64_t(todo.size());
  }

  models::InputEmbeddings embeds;
  if (plan.embeds.empty()) return embeds;
  int64_t total = 0;
  for (const EmbedSlice& e : plan.embeds) total += e.count;
  const vt::Tensor& first = features_.at(plan.embeds.front().hash());
  const EmbedSlice& e0 = plan.embeds.front();
  const bool whole = plan.embeds.size() == 1 && e0.feature_row == 0 && e0.count == first.size(0);
  if (whole) {
    embeds.values = first;  // a view: no copy
  } else {
    embeds.values = vt::Tensor::empty({total, first.size(1)}, first.dtype(), first.device());
  }
  int64_t at = 0;
  for (const EmbedSlice& e : plan.embeds) {
    const vt::Tensor& f = features_.at(e.hash());
    VT_CHECK(e.count > 0 && e.feature_row >= 0 && e.feature_row + e.count <= f.size(0),
             "vision encoder: placeholder rows [", e.feature_row, ", ", e.feature_row + e.count,
             ") outside the item's ", f.size(0), " feature rows");
    for (int32_t k = 0; k < e.count; ++k) embeds.rows.push_back(e.row + k);
    if (!whole) {
      vt::Tensor dst = embeds.values.slice(0, at, at + e.count);
      vt::copy(s, f.slice(0, e.feature_row, e.feature_row + e.count), dst);
    }
    at += e.count;
  }
  return embeds;
}

}  // namespace vtllm::engine
