#include "models/layers/gdn.h"

#include <cmath>

#include "base/error.h"
#include "vt/ops/copy.h"
#include "vt/ops/fill.h"
#include "vt/ops/gdn.h"
#include "vt/ops/gemm.h"
#include "vt/ops/norm.h"

namespace vtllm::models {

namespace {
// Zeroes slot `slot` of a [slots, ...] state tensor: a sequence starts from zero.
void zero_slot(vt::Stream& s, vt::Tensor& t, int64_t slot) {
  VT_CHECK(slot >= 0 && slot < t.size(0), "GatedDeltaNet: state slot ", slot, " is not one of ",
           t.size(0));
  vt::Tensor row = t.select(0, slot);
  vt::zero(s, row);
}

// `t` [slots, ...] as [slots, rest]: rows copy_rows can move whole.
vt::Tensor slot_rows(const vt::Tensor& t) { return t.view({t.size(0), t.numel() / t.size(0)}); }

// Rows `rows` of the 2-D `x` gathered into a new contiguous tensor.
vt::Tensor gather_rows(vt::Stream& s, const vt::Tensor& x, const GdnSaves& sv) {
  vt::Tensor out =
      vt::Tensor::empty({int64_t(sv.tail_rows.size()), x.size(1)}, x.dtype(), x.device());
  vt::copy_rows(s, x, index_tensor(sv.tail_rows), out, index_tensor(sv.tail_index));
  return out;
}
}  // namespace

GatedDeltaNet::GatedDeltaNet(const io::LinearAttentionConfig& d, int64_t hidden, float eps,
                             ParamSink& w, const std::string& prefix)
    : d_(d), hidden_(hidden), eps_(eps) {
  const int64_t hv = d.num_value_heads, K = d.conv_kernel_dim;
  // One linear per step instead of four (conv, gates and the gated norm read its column
  // slices).
  in_proj_ = w.take_stacked({{prefix + "in_proj_qkv.weight", d.conv_dim()},
                             {prefix + "in_proj_z.weight", d.value_dim()},
                             {prefix + "in_proj_b.weight", hv},
                             {prefix + "in_proj_a.weight", hv}},
                            hidden);
  conv_w_ = w.take(prefix + "conv1d.weight", {d.conv_dim(), 1, K});
  if (!w.declaring()) conv_w_ = conv_w_.view({d.conv_dim(), K});
  a_log_ = w.take(prefix + "A_log", {hv});
  dt_bias_ = w.take(prefix + "dt_bias", {hv});
  norm_ = w.take(prefix + "norm.weight", {d.value_head_dim});
  out_proj_ = w.take(prefix + "out_proj.weight", {hidden, d.value_dim()});
}

LayerCacheSpec GatedDeltaNet::cache_spec() const {
  LayerCacheSpec c;
  c.kind = LayerCacheSpec::Kind::kGdn;
  c.conv_rows = d_.conv_kernel_dim - 1;
  c.conv_dim = d_.conv_dim();
  c.value_heads = d_.num_value_heads;
  c.key_head_dim = d_.key_head_dim;
  c.value_head_dim = d_.value_head_dim;
  return c;
}

void GatedDeltaNet::forward(vt::Stream& s, const vt::Tensor& x, const BatchInputs& in,
                            CacheView& cache, int64_t layer, vt::Tensor& out) const {
  GdnState state = cache.gdn(layer);
  VT_CHECK(in.state_slots.defined(), "GatedDeltaNet: the batch has no state_slots");
  VT_CHECK(x.dim() == 2 && x.size(1) == hidden_, "GatedDeltaNet: x ", x.str(), " is not [T, ",
           hidden_, "]");
  const int64_t T = x.size(0), hk = d_.num_key_heads, hv = d_.num_value_heads;
  const int64_t dk = d_.key_head_dim, dv = d_.value_head_dim, kd = d_.key_dim();
  // Activations in x's dtype (in bf16 the projections, conv output, o and y round as the
  // oracle's, qwen3_5.md §8); q/k after l2norm, the gates and the state stay f32 (§8.4-8.6).
  const vt::DType dt = x.dtype(), f32 = vt::DType::kF32;
  const vt::Device dev = x.device();
  // The four projections in one: column slices mixed (q ‖ k ‖ v) | z | b | a.
  const int64_t cd = d_.conv_dim(), vd = d_.value_dim(), width = in_proj_rows();
  vt::Tensor proj = vt::Tensor::empty({T, width}, dt, dev);
  vt::linear(s, x, in_proj_, proj);
  const vt::Tensor mixed = proj.slice(1, 0, cd);
  const vt::Tensor z = proj.slice(1, cd, cd + vd).reshape({T, hv, dv});
  const vt::Tensor bl = proj.slice(1, cd + vd, cd + vd + hv);
  const vt::Tensor al = proj.slice(1, cd + vd + hv, width);

  for (int32_t slot : in.new_state_slots) {
    zero_slot(s, state.conv, slot);
    zero_slot(s, state.recurrent, slot);
  }

  // State saves inside the step (BatchInputs::GdnSaves): each op that carries state runs
  // twice, pass one with the saving requests cut at their offsets, then the tails again
  // from the state there, which is also copied to the save slot.
  const GdnSaves& sv = in.gdn_saves;
  const bool saves = !sv.empty();
  VT_CHECK(!saves || !in.decode_only, "GatedDeltaNet: a state save in a decode step");
  const vt::Tensor first_start = saves ? index_tensor(sv.first_start) : vt::Tensor();
  const vt::Tensor first_slots = saves ? index_tensor(sv.first_slots) : vt::Tensor();
  const vt::Tensor tail_start = saves ? index_tensor(sv.tail_start) : vt::Tensor();
  const vt::Tensor tail_slots = saves ? index_tensor(sv.tail_slots) : vt::Tensor();
  const auto save_states = [&](vt::Tensor& t) {
    vt::Tensor rows = slot_rows(t);
    vt::copy_rows(s, rows, index_tensor(sv.own), rows, index_tensor(sv.save));
  };
  const int64_t Tt = int64_t(sv.tail_rows.size());

  vt::Tensor act = vt::Tensor::empty({T, cd}, dt, dev);
  if (!saves) {
    vt::causal_conv1d_silu(s, mixed, conv_w_, in.query_start_loc, state.conv, in.state_slots, act);
  } else {
    vt::causal_conv1d_silu(s, mixed, conv_w_, first_start, state.conv, first_slots, act);
    save_states(state.conv);
    vt::Tensor tail_act = vt::Tensor::empty({Tt, cd}, dt, dev);
    vt::causal_conv1d_silu(s, gather_rows(s, mixed, sv), conv_w_, tail_start, state.conv,
                           tail_slots, tail_act);
    vt::copy_rows(s, tail_act, index_tensor(sv.tail_index), act, index_tensor(sv.tail_rows));
  }
  const vt::Tensor v = act.slice(1, 2 * kd, cd).reshape({T, hv, dv});
  const float scale = 1.0f / std::sqrt(float(dk));
  vt::Tensor y = vt::Tensor::empty({T, hv, dv}, dt, dev);
  if (in.decode_only) {
    // The per-token recurrence, as the oracle's decode step: l2norm, gates, the rule and
    // the gated norm in one op (one kernel on CUDA), the same values as the ops below
    // with gated_delta_rule_recurrent in place of the chunked form (vt/ops/gdn.h).
    vt::gdn_fused_recurrent(s, act.slice(1, 0, kd).reshape({T, hk, dk}),
                            act.slice(1, kd, 2 * kd).reshape({T, hk, dk}), v, z, al, bl, a_log_,
                            dt_bias_, dt, scale, norm_, eps_, in.query_start_loc, state.recurrent,
                            in.state_slots, y);
  } else {
    // q ‖ k: the 2 Hk heads of act's first 2 key_dim columns (a [T, 2 Hk, Dk] view of two
    // row strides), normalised in one launch; q and k are head slices of the result.
    vt::Tensor qk = vt::Tensor::empty({T, 2 * hk, dk}, f32, dev);
    vt::l2_normalize(s, act.slice(1, 0, 2 * kd).reshape({T, 2 * hk, dk}), vt::kGdnL2NormEps, qk);
    const vt::Tensor q = qk.slice(1, 0, hk), k = qk.slice(1, hk, 2 * hk);
    // beta rounds through the activation dtype: the oracle's bf16 sigmoid(b) (§8.4).
    vt::Tensor g = vt::Tensor::empty({T, hv}, f32, dev);
    vt::Tensor beta = vt::Tensor::empty({T, hv}, f32, dev);
    vt::gdn_gates(s, al, bl, a_log_, dt_bias_, dt, g, beta);
    vt::Tensor o = vt::Tensor::empty({T, hv, dv}, dt, dev);
    // Chunks of 64 (prefill and mixed steps); host indices when the batch has them: the
    // chunked kernel plans chunks from them.
    if (!saves) {
      vt::gated_delta_rule_chunked(
          s, q, k, v, g, beta, scale,
          in.host_query_start_loc.defined() ? in.host_query_start_loc : in.query_start_loc,
          state.recurrent, in.host_state_slots.defined() ? in.host_state_slots : in.state_slots, o);
    } else {
      vt::gated_delta_rule_chunked(s, q, k, v, g, beta, scale, first_start, state.recurrent,
                                   first_slots, o);
      save_states(state.recurrent);
      const vt::Tensor tqk = gather_rows(s, qk.view({T, 2 * hk * dk}), sv).view({Tt, 2 * hk, dk});
      const vt::Tensor tv = gather_rows(s, act.slice(1, 2 * kd, cd), sv).view({Tt, hv, dv});
      vt::Tensor to = vt::Tensor::empty({Tt, hv, dv}, dt, dev);
      vt::gated_delta_rule_chunked(s, tqk.slice(1, 0, hk), tqk.slice(1, hk, 2 * hk), tv,
                                   gather_rows(s, g, sv), gather_rows(s, beta, sv), scale,
                                   tail_start, state.recurrent, tail_slots, to);
      vt::Tensor orows = o.view({T, hv * dv});
      vt::copy_rows(s, to.view({Tt, hv * dv}), index_tensor(sv.tail_index), orows,
                    index_tensor(sv.tail_rows));
    }
    vt::gated_rms_norm(s, o, z, norm_, eps_, y);
  }
  vt::linear(s, y.view({T, hv * dv}), out_proj_, out);
}

}  // namespace vtllm::models
