#include "models/layers/batch_inputs.h"

#include "vt/ops/attn_preamble.h"

namespace vtllm::models {

namespace {
template <class T>
vt::Tensor view_of(const std::vector<T>& v, const vt::Shape& shape) {
  // Read-only by contract: the ops only read index tensors.
  return vt::Tensor::from_blob(const_cast<T*>(v.data()), shape, vt::DTypeOf<T>::value,
                               vt::Device::cpu(), nullptr);
}
}  // namespace

BatchInputs make_batch_inputs(const ForwardBatch& b, const RopeSpec* rope) {
  BatchInputs in;
  const int64_t T = b.num_tokens(), B = b.num_requests();
  in.batch = &b;
  in.token_ids = view_of(b.token_ids, {T});
  in.positions = b.position_rows == 1 ? view_of(b.positions, {T})
                                      : view_of(b.positions, {b.position_rows, T});
  in.query_start_loc = view_of(b.query_start_loc, {B + 1});
  in.seq_lens = view_of(b.seq_lens, {B});
  in.slot_mapping = view_of(b.slot_mapping, {T});
  in.block_table = view_of(b.block_table, {B, b.max_blocks_per_seq});
  if (!b.state_slots.empty()) in.state_slots = view_of(b.state_slots, {B});
  if (rope != nullptr && T > 0)
    in.cos_sin = vt::rope_cos_sin_table(in.positions, rope->rotary_dim, rope->theta,
                                        rope->mrope_section);
  in.decode_only = B > 0;
  for (int64_t r = 0; r < B; ++r)
    if (b.query_start_loc[size_t(r + 1)] - b.query_start_loc[size_t(r)] != 1 ||
        b.context_lens[size_t(r)] == 0)
      in.decode_only = false;
  return in;
}

}  // namespace vtllm::models
