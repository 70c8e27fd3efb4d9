// vt/ops/attention.h: argument checks and the CPU reference (f32 two-pass softmax).
#include "vt/ops/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "vt/cpu/rowio.h"
#include "vt/ops/args.h"

namespace vt {

namespace {

// [T, heads, D] with head_dim stride 1: element offsets of (t, h).
struct Heads {
  char* data;
  DType dtype;
  int64_t tokens, heads, dim, token_stride, head_stride;
  char* at(int64_t t, int64_t h) const {
    return data + (t * token_stride + h * head_stride) * int64_t(dtype_size(dtype));
  }
};

Heads heads_of(const Tensor& t, const char* op, const char* name) {
  expect_dtype(t, op, name, kActDTypes);
  VT_CHECK(t.dim() == 3, op, ": ", name, " ", t.str(), " must be [tokens, heads, head_dim]");
  VT_CHECK(t.stride(2) == 1 || t.size(2) == 1, op, ": ", name, " ", t.str(),
           " needs its head_dim contiguous");
  return {static_cast<char*>(t.data_ptr()), t.dtype(), t.size(0), t.size(1), t.size(2),
          t.stride(0), t.stride(1)};
}

void check_cache(const Tensor& c, const char* op, const char* name) {
  expect_dtype(c, op, name, kActDTypes);
  VT_CHECK(c.dim() == 4 && c.is_contiguous(), op, ": ", name, " ", c.str(),
           " must be a contiguous [num_blocks, block_size, kv_heads, head_dim]");
}

// A 1-D CPU index tensor of i32 or i64, read as int64.
struct Index {
  const char* data;
  bool i64;
  int64_t n, stride;
  int64_t operator[](int64_t i) const {
    return i64 ? reinterpret_cast<const int64_t*>(data)[i * stride]
               : reinterpret_cast<const int32_t*>(data)[i * stride];
  }
};

Index index_of(const Tensor& t, const char* op, const char* name, std::initializer_list<DType> ok) {
  expect_dtype(t, op, name, ok);
  VT_CHECK(t.dim() == 1 && t.device().is_cpu(), op, ": ", name, " ", t.str(),
           " must be a 1-D CPU tensor");
  return {static_cast<const char*>(t.data_ptr()), t.dtype() == DType::kI64, t.size(0), t.stride(0)};
}

}  // namespace

void kv_cache_write(Stream& s, const Tensor& k, const Tensor& v, const Tensor& slot_mapping,
                    Tensor& k_cache, Tensor& v_cache) {
  const char* op = "kv_cache_write";
  Heads kh = heads_of(k, op, "k"), vh = heads_of(v, op, "v");
  expect_shape(v, op, "v", k.shape());
  check_cache(k_cache, op, "k_cache");
  check_cache(v_cache, op, "v_cache");
  expect_shape(v_cache, op, "v_cache", k_cache.shape());
  VT_CHECK(k_cache.size(2) == k.size(1) && k_cache.size(3) == k.size(2), op, ": k_cache ",
           k_cache.str(), " does not hold heads of k ", k.str());
  Index slots = index_of(slot_mapping, op, "slot_mapping", {DType::kI64});
  VT_CHECK(slots.n == k.size(0), op, ": slot_mapping has ", slots.n, " entries for ", k.size(0),
           " tokens");
  expect_device(s, op, {&k, &v, &k_cache, &v_cache});
  if (!s.device().is_cpu()) no_backend(op, s.device());
  const int64_t num_slots = k_cache.size(0) * k_cache.size(1);
  for (int64_t t = 0; t < slots.n; ++t)
    VT_CHECK(slots[t] >= -1 && slots[t] < num_slots, op, ": slot_mapping[", t, "] = ", slots[t],
             " is outside the cache's ", num_slots, " slots");
  const int64_t heads = kh.heads, d = kh.dim, row = heads * d;
  const int64_t kcs = int64_t(k_cache.itemsize()), vcs = int64_t(v_cache.itemsize());
  char* kc = static_cast<char*>(k_cache.data_ptr());
  char* vc = static_cast<char*>(v_cache.data_ptr());
  s.parallel_for(slots.n, 16, [&](int64_t t0, int64_t t1) {
    std::vector<float> buf(static_cast<size_t>(d));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t slot = slots[t];
      if (slot < 0) continue;
      for (int64_t h = 0; h < heads; ++h) {
        cpu::load_row(kh.at(t, h), kh.dtype, d, buf.data());
        cpu::store_row(buf.data(), d, k_cache.dtype(), kc + (slot * row + h * d) * kcs);
        cpu::load_row(vh.at(t, h), vh.dtype, d, buf.data());
        cpu::store_row(buf.data(), d, v_cache.dtype(), vc + (slot * row + h * d) * vcs);
      }
    }
  });
}

void paged_attention(Stream& s, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                     const Tensor& query_start_loc, const Tensor& seq_lens,
                     const Tensor& block_table, float scale, Tensor& out) {
  const char* op = "paged_attention";
  Heads qh = heads_of(q, op, "q"), oh = heads_of(out, op, "out");
  expect_shape(out, op, "out", q.shape());
  expect_no_alias(q, out, op, "q");
  check_cache(k_cache, op, "k_cache");
  check_cache(v_cache, op, "v_cache");
  expect_shape(v_cache, op, "v_cache", k_cache.shape());
  const int64_t block_size = k_cache.size(1), hkv = k_cache.size(2), d = k_cache.size(3);
  VT_CHECK(d == q.size(2), op, ": k_cache ", k_cache.str(), " has head_dim ", d, ", q ", q.str(),
           " has ", q.size(2));
  const int64_t hq = q.size(1);
  VT_CHECK(hkv > 0 && hq % hkv == 0, op, ": ", hq, " query heads are not a multiple of ", hkv,
           " kv heads");
  Index qsl = index_of(query_start_loc, op, "query_start_loc", {DType::kI32});
  Index lens = index_of(seq_lens, op, "seq_lens", {DType::kI32});
  const int64_t batch = lens.n;
  VT_CHECK(qsl.n == batch + 1, op, ": query_start_loc has ", qsl.n, " entries for ", batch,
           " requests");
  VT_CHECK(qsl[0] == 0 && qsl[batch] == q.size(0), op, ": query_start_loc must run from 0 to ",
           q.size(0), " tokens");
  expect_dtype(block_table, op, "block_table", {DType::kI32});
  VT_CHECK(block_table.dim() == 2 && block_table.size(0) == batch && block_table.is_contiguous() &&
               block_table.device().is_cpu(),
           op, ": block_table ", block_table.str(), " must be a contiguous CPU [", batch,
           ", max_blocks]");
  const int64_t max_blocks = block_table.size(1);
  const int32_t* bt = block_table.data<int32_t>();
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t q_len = qsl[b + 1] - qsl[b];
    VT_CHECK(q_len >= 0 && q_len <= lens[b], op, ": request ", b, " has ", q_len,
             " query tokens but seq_len ", lens[b]);
    VT_CHECK(lens[b] <= max_blocks * block_size, op, ": request ", b, " seq_len ", lens[b],
             " exceeds its block table (", max_blocks, " blocks of ", block_size, ")");
    for (int64_t i = 0; i < (lens[b] + block_size - 1) / block_size; ++i)
      VT_CHECK(bt[b * max_blocks + i] >= 0 && bt[b * max_blocks + i] < k_cache.size(0), op,
               ": block_table[", b, ", ", i, "] = ", bt[b * max_blocks + i], " is not a block of ",
               k_cache.size(0));
  }
  expect_device(s, op, {&q, &k_cache, &v_cache, &out});
  if (!s.device().is_cpu()) no_backend(op, s.device());

  // Token -> request, so (token, head) pairs can be spread over the pool.
  std::vector<int64_t> req_of(static_cast<size_t>(q.size(0)));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = qsl[b]; t < qsl[b + 1]; ++t) req_of[size_t(t)] = b;
  const int64_t group = hq / hkv, row = hkv * d;
  const int64_t kcs = int64_t(k_cache.itemsize()), vcs = int64_t(v_cache.itemsize());
  const char* kc = static_cast<const char*>(k_cache.data_ptr());
  const char* vc = static_cast<const char*>(v_cache.data_ptr());
  s.parallel_for(q.size(0) * hq, 1, [&](int64_t i0, int64_t i1) {
    std::vector<float> qv(static_cast<size_t>(d)), kv(static_cast<size_t>(d)), acc(static_cast<size_t>(d)), p;
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t t = i / hq, h = i % hq, b = req_of[size_t(t)], g = h / group;
      const int64_t q_len = qsl[b + 1] - qsl[b], ctx = lens[b] - q_len;
      const int64_t n_keys = ctx + (t - qsl[b]) + 1;
      cpu::load_row(qh.at(t, h), qh.dtype, d, qv.data());
      p.resize(size_t(n_keys));
      auto slot = [&](int64_t key) {
        return int64_t(bt[b * max_blocks + key / block_size]) * block_size + key % block_size;
      };
      float mx = -INFINITY;
      for (int64_t j = 0; j < n_keys; ++j) {
        cpu::load_row(kc + (slot(j) * row + g * d) * kcs, k_cache.dtype(), d, kv.data());
        float dot = 0.0f;
        for (int64_t e = 0; e < d; ++e) dot += qv[size_t(e)] * kv[size_t(e)];
        p[size_t(j)] = dot * scale;
        mx = std::max(mx, p[size_t(j)]);
      }
      float sum = 0.0f;
      for (float& x : p) sum += (x = std::exp(x - mx));
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j = 0; j < n_keys; ++j) {
        cpu::load_row(vc + (slot(j) * row + g * d) * vcs, v_cache.dtype(), d, kv.data());
        const float w = p[size_t(j)];
        for (int64_t e = 0; e < d; ++e) acc[size_t(e)] += w * kv[size_t(e)];
      }
      for (float& x : acc) x /= sum;
      cpu::store_row(acc.data(), d, oh.dtype, oh.at(t, h));
    }
  });
}

}  // namespace vt
