#include "models/layers/batch_inputs.h"

#include <memory>

#include "vt/ops/attn_preamble.h"
#include "vt/ops/copy.h"

namespace vtllm::models {

namespace {
template <class T>
vt::Tensor view_of(const std::vector<T>& v, const vt::Shape& shape) {
  // Read-only by contract: the ops only read index tensors.
  return vt::Tensor::from_blob(const_cast<T*>(v.data()), shape, vt::DTypeOf<T>::value,
                               vt::Device::cpu(), nullptr);
}
}  // namespace

vt::Tensor index_tensor(const std::vector<int32_t>& values) {
  return view_of(values, {int64_t(values.size())});
}

BatchInputs make_batch_inputs(vt::Stream& s, const ForwardBatch& b, const RopeSpec* rope,
                              vt::DType act_dtype) {
  BatchInputs in;
  const int64_t T = b.num_tokens(), B = b.num_requests();
  const vt::Shape pos_shape =
      b.position_rows == 1 ? vt::Shape{T} : vt::Shape{int64_t(b.position_rows), T};
  in.token_ids = view_of(b.token_ids, {T});
  in.positions = view_of(b.positions, pos_shape);
  in.query_start_loc = view_of(b.query_start_loc, {B + 1});
  in.seq_lens = view_of(b.seq_lens, {B});
  in.slot_mapping = view_of(b.slot_mapping, {T});
  in.block_table = view_of(b.block_table, {B, b.max_blocks_per_seq});
  if (!b.state_slots.empty()) {
    in.state_slots = view_of(b.state_slots, {B});
    for (int64_t r = 0; r < B; ++r)
      if (b.context_lens[size_t(r)] == 0) in.new_state_slots.push_back(b.state_slots[size_t(r)]);
  }
  if (rope != nullptr && T > 0) {
    vt::Tensor table = vt::rope_cos_sin_table(in.positions, rope->rotary_dim, rope->theta,
                                              rope->mrope_section);
    if (act_dtype != vt::DType::kF32) {  // round to the activation dtype, exactly widened back
      std::unique_ptr<vt::Stream> own;
      if (!s.device().is_cpu()) own = std::make_unique<vt::Stream>(vt::Device::cpu(), 1);
      vt::Stream& cpu = own ? *own : s;
      table = vt::to_dtype(cpu, vt::to_dtype(cpu, table, act_dtype), vt::DType::kF32);
    }
    in.cos_sin = vt::to_device(s, table, s.device());
  }
  in.decode_only = B > 0;
  for (int64_t r = 0; r < B; ++r)
    if (b.query_start_loc[size_t(r + 1)] - b.query_start_loc[size_t(r)] != 1 ||
        b.context_lens[size_t(r)] == 0)
      in.decode_only = false;
  return in;
}

}  // namespace vtllm::models
