// vt/ops/attention.h: argument checks (once, before dispatch) and the backend choice.
#include "vt/ops/attention.h"

#include "vt/cpu/attention.h"
#include "vt/ops/args.h"
#include "vt/ops/indices.h"
#include "vt/profile.h"
#if VTLLM_WITH_CUDA
#include "vt/cuda/attention.h"
#endif

namespace vt {

namespace {

void check_cache(const Tensor& c, const char* op, const char* name) {
  expect_dtype(c, op, name, kActDTypes);
  VT_CHECK(c.dim() == 4 && c.is_contiguous(), op, ": ", name, " ", c.str(),
           " must be a contiguous [num_blocks, block_size, kv_heads, head_dim]");
}

// The host form's checks: layout against q and the cache, values against the bounds.
void check_host_batch(PagedBatch& pb, const Tensor& q, const Tensor& block_table,
                      const Tensor& k_cache, const char* op) {
  const int64_t batch = pb.batch(), block_size = k_cache.size(1);
  VT_CHECK(int64_t(pb.query_start.size()) == batch + 1, op, ": query_start_loc has ",
           pb.query_start.size(), " entries for ", batch, " requests");
  VT_CHECK(pb.query_start[0] == 0 && pb.query_start[size_t(batch)] == q.size(0), op,
           ": query_start_loc must run from 0 to ", q.size(0), " tokens");
  VT_CHECK(block_table.dim() == 2 && block_table.size(0) == batch && block_table.is_contiguous() &&
               block_table.device().is_cpu(),
           op, ": block_table ", block_table.str(), " must be a contiguous CPU [", batch,
           ", max_blocks]");
  pb.max_blocks = block_table.size(1);
  pb.block_table = block_table.data<int32_t>();
  const AttentionBounds& bd = pb.bounds;
  VT_CHECK(!bd.defined() || batch <= bd.batch, op, ": ", batch, " requests exceed the bound ",
           bd.batch);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t q_len = pb.query_start[size_t(b + 1)] - pb.query_start[size_t(b)];
    const int64_t len = pb.seq_lens[size_t(b)];
    VT_CHECK(q_len >= 0 && q_len <= len, op, ": request ", b, " has ", q_len,
             " query tokens but seq_len ", len);
    VT_CHECK(len <= pb.max_blocks * block_size, op, ": request ", b, " seq_len ", len,
             " exceeds its block table (", pb.max_blocks, " blocks of ", block_size, ")");
    VT_CHECK(!bd.defined() || (q_len <= bd.max_query_len && len <= bd.max_seq_len), op,
             ": request ", b, " (", q_len, " query tokens, seq_len ", len,
             ") exceeds the bounds (max_query_len ", bd.max_query_len, ", max_seq_len ",
             bd.max_seq_len, ")");
    for (int64_t i = 0; i < (len + block_size - 1) / block_size; ++i) {
      const int32_t blk = pb.block_table[b * pb.max_blocks + i];
      VT_CHECK(blk >= 0 && blk < k_cache.size(0), op, ": block_table[", b, ", ", i, "] = ", blk,
               " is not a block of ", k_cache.size(0));
    }
  }
}

}  // namespace

SlotMapping check_kv_cache_write(const Stream& s, const Tensor& k, const Tensor& v,
                                 const Tensor& slot_mapping, const Tensor& k_cache,
                                 const Tensor& v_cache, const char* op) {
  expect_heads(k, op, "k");
  expect_heads(v, op, "v");
  expect_shape(v, op, "v", k.shape());
  check_cache(k_cache, op, "k_cache");
  check_cache(v_cache, op, "v_cache");
  expect_shape(v_cache, op, "v_cache", k_cache.shape());
  VT_CHECK(k_cache.size(2) == k.size(1) && k_cache.size(3) == k.size(2), op, ": k_cache ",
           k_cache.str(), " does not hold heads of k ", k.str());
  expect_device(s, op, {&k, &v, &k_cache, &v_cache});
  SlotMapping slots;
  if (indices_on_device(s, op, {{&slot_mapping, "slot_mapping"}})) {
    slots.device = static_cast<const int64_t*>(
        device_index(slot_mapping, op, "slot_mapping", DType::kI64, k.size(0)));
  } else {
    slots.host = read_index(slot_mapping, op, "slot_mapping", {DType::kI64});
    VT_CHECK(int64_t(slots.host.size()) == k.size(0), op, ": slot_mapping has ",
             slots.host.size(), " entries for ", k.size(0), " tokens");
    const int64_t num_slots = k_cache.size(0) * k_cache.size(1);
    for (size_t t = 0; t < slots.host.size(); ++t)
      VT_CHECK(slots.host[t] >= -1 && slots.host[t] < num_slots, op, ": slot_mapping[", t,
               "] = ", slots.host[t], " is outside the cache's ", num_slots, " slots");
  }
  for (const Tensor* c : {&k_cache, &v_cache}) {
    expect_no_alias(k, *c, op, "k");
    expect_no_alias(v, *c, op, "v");
  }
  expect_no_alias(k_cache, v_cache, op, "k_cache");
  return slots;
}

void kv_cache_write(Stream& s, const Tensor& k, const Tensor& v, const Tensor& slot_mapping,
                    Tensor& k_cache, Tensor& v_cache) {
  OpScope prof(s, "kv_cache_write");
  const SlotMapping slots =
      check_kv_cache_write(s, k, v, slot_mapping, k_cache, v_cache, "kv_cache_write");
  if (s.device().is_cpu()) return cpu::kv_cache_write(s, k, v, slots.host, k_cache, v_cache);
#if VTLLM_WITH_CUDA
  cuda::kv_cache_write(s, k, v, slots, k_cache, v_cache);
#else
  no_backend("kv_cache_write", s.device());
#endif
}

void paged_attention(Stream& s, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                     const Tensor& query_start_loc, const Tensor& seq_lens,
                     const Tensor& block_table, float scale, Tensor& out,
                     const AttentionBounds& bounds) {
  OpScope prof(s, "paged_attention");
  const char* op = "paged_attention";
  expect_heads(q, op, "q");
  expect_heads(out, op, "out");
  expect_shape(out, op, "out", q.shape());
  expect_no_alias(q, out, op, "q");
  check_cache(k_cache, op, "k_cache");
  check_cache(v_cache, op, "v_cache");
  expect_shape(v_cache, op, "v_cache", k_cache.shape());
  expect_no_alias(k_cache, out, op, "k_cache");
  expect_no_alias(v_cache, out, op, "v_cache");
  const int64_t hkv = k_cache.size(2), d = k_cache.size(3);
  VT_CHECK(d == q.size(2), op, ": k_cache ", k_cache.str(), " has head_dim ", d, ", q ", q.str(),
           " has ", q.size(2));
  const int64_t hq = q.size(1);
  VT_CHECK(hkv > 0 && hq % hkv == 0, op, ": ", hq, " query heads are not a multiple of ", hkv,
           " kv heads");
  expect_device(s, op, {&q, &k_cache, &v_cache, &out});
  PagedBatch pb{};
  pb.bounds = bounds;
  expect_dtype(block_table, op, "block_table", {DType::kI32});
  if (indices_on_device(s, op, {{&query_start_loc, "query_start_loc"}, {&seq_lens, "seq_lens"},
                                {&block_table, "block_table"}})) {
    VT_CHECK(bounds.defined(), op, ": index tensors on the device need bounds (batch, "
             "max_query_len, max_seq_len)");
    VT_CHECK(seq_lens.dim() == 1, op, ": seq_lens ", seq_lens.str(), " must be [requests]");
    pb.d_batch = seq_lens.size(0);
    pb.d_seq_lens = static_cast<const int32_t*>(
        device_index(seq_lens, op, "seq_lens", DType::kI32, pb.d_batch));
    pb.d_query_start = static_cast<const int32_t*>(
        device_index(query_start_loc, op, "query_start_loc", DType::kI32, pb.d_batch + 1));
    VT_CHECK(block_table.dim() == 2 && block_table.size(0) == pb.d_batch, op, ": block_table ",
             block_table.str(), " must be [", pb.d_batch, ", max_blocks]");
    pb.d_block_table = static_cast<const int32_t*>(
        device_index(block_table, op, "block_table", DType::kI32, -1));
    pb.max_blocks = block_table.size(1);
    // q rows past what B requests of max_query_len can own are nobody's: never written.
    // max_seq_len only sizes the split; the kernels read keys up to each real seq_len,
    // which the caller validated against the block table.
    VT_CHECK(pb.d_batch <= bounds.batch, op, ": bounds (batch ", bounds.batch,
             ", max_query_len ", bounds.max_query_len, ", max_seq_len ", bounds.max_seq_len,
             ") do not cover ", pb.d_batch, " requests");
  } else {
    pb.query_start = read_index(query_start_loc, op, "query_start_loc", {DType::kI32});
    pb.seq_lens = read_index(seq_lens, op, "seq_lens", {DType::kI32});
    check_host_batch(pb, q, block_table, k_cache, op);
  }
  expect_device(s, op, {&q, &k_cache, &v_cache, &out});
  if (s.device().is_cpu()) return cpu::paged_attention(s, q, k_cache, v_cache, pb, scale, out);
#if VTLLM_WITH_CUDA
  cuda::paged_attention(s, q, k_cache, v_cache, pb, scale, out);
#else
  no_backend(op, s.device());
#endif
}

}  // namespace vt
