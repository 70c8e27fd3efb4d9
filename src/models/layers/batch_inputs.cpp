#include "models/layers/batch_inputs.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "base/error.h"
#include "vt/ops/attn_preamble.h"
#include "vt/ops/copy.h"
#include "vt/ops/rope.h"

namespace vtllm::models {

namespace {

template <class T>
vt::Tensor view_of(const std::vector<T>& v, const vt::Shape& shape) {
  // Read-only by contract: the ops only read index tensors.
  return vt::Tensor::from_blob(const_cast<T*>(v.data()), shape, vt::DTypeOf<T>::value,
                               vt::Device::cpu(), nullptr);
}

constexpr int64_t kAlign = 16;
int64_t aligned(int64_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// Byte offsets of the packed sections (see batch_inputs.h).
struct Packing {
  int64_t ids, qsl, seq, table, slots, slot_map, cos_sin, end;
  Packing(int64_t T, int64_t B, int64_t W, int64_t R) {
    ids = 0;
    qsl = ids + aligned(4 * T);
    seq = qsl + aligned(4 * (B + 1));
    table = seq + aligned(4 * B);
    slots = table + aligned(4 * B * W);
    slot_map = slots + aligned(4 * B);
    cos_sin = slot_map + aligned(8 * T);
    end = cos_sin + aligned(4 * T * R);
  }
};

// The cos/sin table of `positions` rounded through act_dtype (host, f32).
vt::Tensor host_cos_sin(const vt::Tensor& positions, const RopeSpec& rope, vt::DType act_dtype) {
  vt::Tensor table =
      vt::rope_cos_sin_table(positions, rope.rotary_dim, rope.theta, rope.mrope_section);
  if (act_dtype != vt::DType::kF32) {  // round to the activation dtype, exactly widened back
    vt::Stream cpu(vt::Device::cpu(), 1);
    table = vt::to_dtype(cpu, vt::to_dtype(cpu, table, act_dtype), vt::DType::kF32);
  }
  return table;
}

void set_facts(BatchInputs& in, const ForwardBatch& b) {
  const int64_t B = b.num_requests();
  if (!b.state_slots.empty())
    for (int64_t r = 0; r < B; ++r)
      if (b.context_lens[size_t(r)] == 0) in.new_state_slots.push_back(b.state_slots[size_t(r)]);
  GdnSaves& g = in.gdn_saves;
  if (!b.state_saves.empty()) {
    size_t next = 0;
    for (int64_t r = 0; r < B; ++r) {
      const int32_t begin = b.query_start_loc[size_t(r)], end = b.query_start_loc[size_t(r + 1)];
      const int32_t own = b.state_slots.at(size_t(r));
      g.first_start.push_back(begin);
      g.first_slots.push_back(own);
      if (next == b.state_saves.size() || b.state_saves[next].request != r) continue;
      const StateSave& sv = b.state_saves[next++];
      g.first_start.push_back(begin + sv.offset);
      g.first_slots.push_back(sv.slot);
      g.tail_start.push_back(int32_t(g.tail_rows.size()));
      g.tail_slots.push_back(own);
      for (int32_t t = begin + sv.offset; t < end; ++t) g.tail_rows.push_back(t);
      g.own.push_back(own);
      g.save.push_back(sv.slot);
    }
    g.first_start.push_back(b.query_start_loc[size_t(B)]);
    g.tail_start.push_back(int32_t(g.tail_rows.size()));
    g.tail_index.resize(g.tail_rows.size());
    for (size_t i = 0; i < g.tail_index.size(); ++i) g.tail_index[i] = int32_t(i);
  }
  in.decode_only = B > 0;
  for (int64_t r = 0; r < B; ++r)
    if (b.query_start_loc[size_t(r + 1)] - b.query_start_loc[size_t(r)] != 1 ||
        b.context_lens[size_t(r)] == 0)
      in.decode_only = false;
}

BatchInputs host_inputs(vt::Stream& s, const ForwardBatch& b, const RopeSpec* rope,
                        vt::DType act_dtype) {
  BatchInputs in;
  const int64_t T = b.num_tokens(), B = b.num_requests();
  in.num_tokens = T;
  const vt::Shape pos_shape =
      b.position_rows == 1 ? vt::Shape{T} : vt::Shape{int64_t(b.position_rows), T};
  in.token_ids = view_of(b.token_ids, {T});
  in.positions = view_of(b.positions, pos_shape);
  in.query_start_loc = view_of(b.query_start_loc, {B + 1});
  in.seq_lens = view_of(b.seq_lens, {B});
  in.slot_mapping = view_of(b.slot_mapping, {T});
  in.block_table = view_of(b.block_table, {B, b.max_blocks_per_seq});
  if (!b.state_slots.empty()) in.state_slots = view_of(b.state_slots, {B});
  in.host_query_start_loc = in.query_start_loc;
  in.host_state_slots = in.state_slots;
  if (rope != nullptr && T > 0)
    in.cos_sin = vt::to_device(s, host_cos_sin(in.positions, *rope, act_dtype), s.device());
  set_facts(in, b);
  return in;
}

}  // namespace

vt::Tensor index_tensor(const std::vector<int32_t>& values) {
  return view_of(values, {int64_t(values.size())});
}

int64_t packed_bytes(int64_t T, int64_t B, int64_t width, int64_t table_width) {
  return Packing(T, B, width, table_width).end;
}

void validate_step_ranges(const ForwardBatch& b, int64_t num_blocks, int64_t num_state_slots,
                          int64_t vocab) {
  const char* what = "ForwardBatch";
  const int64_t B = b.num_requests(), W = b.max_blocks_per_seq, bs = b.block_size;
  for (size_t t = 0; t < b.token_ids.size(); ++t)
    VT_CHECK(b.token_ids[t] >= 0 && b.token_ids[t] < vocab, what, ": token_ids[", t,
             "] = ", b.token_ids[t], " is outside the vocabulary of ", vocab);
  for (size_t t = 0; t < b.slot_mapping.size(); ++t)
    VT_CHECK(b.slot_mapping[t] >= -1 && b.slot_mapping[t] < num_blocks * bs, what,
             ": slot_mapping[", t, "] = ", b.slot_mapping[t], " is outside the cache's ",
             num_blocks * bs, " slots");
  for (int64_t r = 0; r < B; ++r) {
    const int64_t len = b.seq_lens[size_t(r)];
    VT_CHECK(len <= W * bs, what, ": request ", r, " seq_len ", len, " exceeds its block table (",
             W, " blocks of ", bs, ")");
    for (int64_t i = 0; i < (len + bs - 1) / bs; ++i) {
      const int32_t blk = b.block_table[size_t(r * W + i)];
      VT_CHECK(blk >= 0 && blk < num_blocks, what, ": block_table[", r, ", ", i, "] = ", blk,
               " is not a block of ", num_blocks);
    }
  }
  // A model without GDN layers has no state slots and ignores the batch's (the engine
  // fills them whatever the model).
  if (b.state_slots.empty() || num_state_slots == 0) return;
  std::vector<int32_t> seen(b.state_slots);
  for (size_t r = 0; r < seen.size(); ++r)
    VT_CHECK(seen[r] >= 0 && seen[r] < num_state_slots, what, ": state_slots[", r, "] = ", seen[r],
             " is not one of the ", num_state_slots, " slots");
  for (const StateSave& sv : b.state_saves) {
    VT_CHECK(sv.slot >= 0 && sv.slot < num_state_slots, what, ": the state save of request ",
             sv.request, " goes to slot ", sv.slot, ", not one of the ", num_state_slots);
    seen.push_back(sv.slot);
  }
  std::sort(seen.begin(), seen.end());
  VT_CHECK(std::adjacent_find(seen.begin(), seen.end()) == seen.end(), what,
           ": two requests (or a request and a state save) share a state slot");
}

namespace {

// A step's sizes: the batch's own (T0 tokens, B0 requests, W0 block-table columns) and
// the packed ones, which a CUDA-graph layout pads (T = B = layout->batch, W =
// layout->table_width); R rotary columns; whether GDN state slots travel.
struct StepDims {
  int64_t T0, B0, W0, T, B, W, R;
  bool padded, gdn;
};
StepDims step_dims(const ForwardBatch& b, const RopeSpec* rope, const StepLayout* layout) {
  const int64_t T0 = b.num_tokens(), B0 = b.num_requests(), W0 = b.max_blocks_per_seq;
  const bool padded = layout != nullptr;
  return {T0,
          B0,
          W0,
          padded ? layout->batch : T0,
          padded ? layout->batch : B0,
          padded ? layout->table_width : W0,
          rope != nullptr ? vt::rope_table_width(rope->rotary_dim) : 0,
          padded,
          !b.state_slots.empty() || (padded && layout->pad_state_slot >= 0)};
}

}  // namespace

std::vector<int64_t> pack_step(const ForwardBatch& b, const RopeSpec* rope, vt::DType act_dtype,
                               const StepLayout* layout, PackedOffsets* offsets) {
  const auto [T0, B0, W0, T, B, W, R, padded, gdn] = step_dims(b, rope, layout);
  VT_CHECK(!padded || (B0 <= B && W0 <= W), "pack_step: ", B0, " requests x ", W0,
           " blocks do not fit the layout's ", B, " x ", W);
  const Packing pk(T, B, W, R);
  if (offsets != nullptr)
    *offsets =
        PackedOffsets{pk.ids, pk.qsl, pk.seq, pk.table, pk.slots, pk.slot_map, pk.cos_sin, pk.end};
  std::vector<int64_t> words(size_t((pk.end + 7) / 8), 0);
  char* base = reinterpret_cast<char*>(words.data());
  auto i32_at = [&](int64_t off) { return reinterpret_cast<int32_t*>(base + off); };
  std::copy(b.token_ids.begin(), b.token_ids.end(), i32_at(pk.ids));
  std::copy(b.query_start_loc.begin(), b.query_start_loc.end(), i32_at(pk.qsl));
  std::copy(b.seq_lens.begin(), b.seq_lens.end(), i32_at(pk.seq));
  for (int64_t r = 0; r < B0; ++r)
    std::copy(b.block_table.begin() + r * W0, b.block_table.begin() + (r + 1) * W0,
              i32_at(pk.table) + r * W);  // columns past W0 stay 0 (the null block)
  std::copy(b.state_slots.begin(), b.state_slots.end(), i32_at(pk.slots));
  int64_t* slot_map = reinterpret_cast<int64_t*>(base + pk.slot_map);
  std::copy(b.slot_mapping.begin(), b.slot_mapping.end(), slot_map);
  std::vector<int64_t> pos(b.positions);
  for (int64_t r = B0; r < B; ++r) {  // padding: token 0, one key of block 0, no KV write
    i32_at(pk.qsl)[r + 1] = int32_t(r + 1);
    i32_at(pk.seq)[r] = 1;
    if (gdn) i32_at(pk.slots)[r] = layout->pad_state_slot;
    slot_map[r] = -1;
  }
  if (padded && B > B0) {  // positions [rows, T0] -> [rows, B], 0 for padding
    pos.assign(size_t(b.position_rows * B), 0);
    for (int64_t row = 0; row < b.position_rows; ++row)
      for (int64_t t = 0; t < T0; ++t) pos[size_t(row * B + t)] = b.positions[size_t(row * T0 + t)];
  }
  const vt::Shape pos_shape =
      b.position_rows == 1 ? vt::Shape{T} : vt::Shape{int64_t(b.position_rows), T};
  if (R > 0 && T > 0) {
    const vt::Tensor table = host_cos_sin(view_of(pos, pos_shape), *rope, act_dtype);
    std::memcpy(base + pk.cos_sin, table.data_ptr(), size_t(4 * T * R));
  }
  return words;
}

BatchInputs make_batch_inputs(vt::Stream& s, const ForwardBatch& b, const RopeSpec* rope,
                              vt::DType act_dtype, const StepLayout* layout,
                              const vt::Tensor* into) {
  if (s.device().is_cpu()) {
    VT_CHECK(layout == nullptr && into == nullptr, "make_batch_inputs: layouts are for CUDA");
    return host_inputs(s, b, rope, act_dtype);
  }
  const auto [T0, B0, W0, T, B, W, R, padded, gdn] = step_dims(b, rope, layout);
  BatchInputs in;
  set_facts(in, b);
  in.num_tokens = T;
  if (padded) {
    VT_CHECK(in.decode_only || B0 == 0,
             "make_batch_inputs: a padded layout needs a decode-only batch");
    VT_CHECK(B0 <= B && W0 <= W, "make_batch_inputs: ", B0, " requests x ", W0,
             " blocks do not fit the layout's ", B, " x ", W);
    for (int64_t r = 0; r < B0; ++r)
      VT_CHECK(b.seq_lens[size_t(r)] <= layout->bounds.max_seq_len, "make_batch_inputs: seq_len ",
               b.seq_lens[size_t(r)], " exceeds the layout's ", layout->bounds.max_seq_len);
    in.decode_only = true;
    in.bounds = layout->bounds;
  } else {
    int64_t max_q = 1, max_len = 1;
    for (int64_t r = 0; r < B0; ++r) {
      max_q =
          std::max<int64_t>(max_q, b.query_start_loc[size_t(r + 1)] - b.query_start_loc[size_t(r)]);
      max_len = std::max<int64_t>(max_len, b.seq_lens[size_t(r)]);
    }
    in.bounds = vt::AttentionBounds{std::max<int64_t>(B0, 1), max_q, max_len};
  }

  const Packing pk(T, B, W, R);
  const std::vector<int64_t> words = pack_step(b, rope, act_dtype, layout);
  const vt::Shape pos_shape =
      b.position_rows == 1 ? vt::Shape{T} : vt::Shape{int64_t(b.position_rows), T};
  // One copy into the device buffer.
  vt::Tensor dev;
  if (into != nullptr) {
    VT_CHECK(into->defined() && into->device() == s.device() && into->is_contiguous() &&
                 into->dtype() == vt::DType::kI64 && int64_t(into->nbytes()) >= pk.end,
             "make_batch_inputs: the input buffer ", into->defined() ? into->str() : "(none)",
             " cannot hold ", pk.end, " bytes on ", s.device().str());
    dev = *into;
  } else {
    dev = vt::Tensor::empty({(pk.end + 7) / 8}, vt::DType::kI64, s.device());
  }
  vt::Tensor src = vt::Tensor::from_blob(const_cast<int64_t*>(words.data()), {(pk.end + 7) / 8},
                                         vt::DType::kI64, vt::Device::cpu(), nullptr);
  vt::Tensor dst = dev.view({dev.numel()}).slice(0, 0, (pk.end + 7) / 8);
  vt::copy(s, src, dst);  // <= 1 MiB goes through the pinned ring and returns at once

  auto view = [&](int64_t off, const vt::Shape& shape, vt::DType dt) {
    return vt::Tensor::from_blob(static_cast<char*>(dev.data_ptr()) + off, shape, dt, s.device(),
                                 nullptr);
  };
  in.packed = dev;
  in.token_ids = view(pk.ids, {T}, vt::DType::kI32);
  in.query_start_loc = view(pk.qsl, {B + 1}, vt::DType::kI32);
  in.seq_lens = view(pk.seq, {B}, vt::DType::kI32);
  in.block_table = view(pk.table, {B, W}, vt::DType::kI32);
  if (gdn) in.state_slots = view(pk.slots, {B}, vt::DType::kI32);
  in.slot_mapping = view(pk.slot_map, {T}, vt::DType::kI64);
  if (R > 0 && T > 0) in.cos_sin = view(pk.cos_sin, {T, R}, vt::DType::kF32);
  if (!padded) {
    in.positions = view_of(b.positions, pos_shape);
    in.host_query_start_loc = view_of(b.query_start_loc, {B0 + 1});
    if (!b.state_slots.empty()) in.host_state_slots = view_of(b.state_slots, {B0});
  }
  return in;
}

}  // namespace vtllm::models
