// The CPU reference of vt/ops/attention.h: f32 two-pass softmax per (token, head).
#include "vt/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "vt/cpu/rounding.h"
#include "vt/cpu/rowio.h"

namespace vt::cpu {

namespace {

// [T, heads, D] with head_dim stride 1: element offsets of (t, h).
struct Heads {
  char* data;
  DType dtype;
  int64_t token_stride, head_stride;
  char* at(int64_t t, int64_t h) const {
    return data + (t * token_stride + h * head_stride) * int64_t(dtype_size(dtype));
  }
};

Heads heads_of(const Tensor& t) {
  return {static_cast<char*>(t.data_ptr()), t.dtype(), t.stride(0), t.stride(1)};
}

}  // namespace

void kv_cache_write(Stream& s, const Tensor& k, const Tensor& v, const std::vector<int64_t>& slots,
                    const Tensor& k_cache, const Tensor& v_cache) {
  const Heads kh = heads_of(k), vh = heads_of(v);
  const int64_t heads = k.size(1), d = k.size(2), row = heads * d;
  const int64_t kcs = int64_t(k_cache.itemsize()), vcs = int64_t(v_cache.itemsize());
  char* kc = static_cast<char*>(k_cache.data_ptr());
  char* vc = static_cast<char*>(v_cache.data_ptr());
  s.parallel_for(int64_t(slots.size()), 16, [&](int64_t t0, int64_t t1) {
    std::vector<float> buf(static_cast<size_t>(d));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t slot = slots[size_t(t)];
      if (slot < 0) continue;
      for (int64_t h = 0; h < heads; ++h) {
        load_row(kh.at(t, h), kh.dtype, d, buf.data());
        store_row(buf.data(), d, k_cache.dtype(), kc + (slot * row + h * d) * kcs);
        load_row(vh.at(t, h), vh.dtype, d, buf.data());
        store_row(buf.data(), d, v_cache.dtype(), vc + (slot * row + h * d) * vcs);
      }
    }
  });
}

void paged_attention(Stream& s, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                     const PagedBatch& pb, float scale, const Tensor& out) {
  const Heads qh = heads_of(q), oh = heads_of(out);
  const int64_t block_size = k_cache.size(1), hkv = k_cache.size(2), d = k_cache.size(3);
  const int64_t hq = q.size(1), batch = pb.batch(), max_blocks = pb.max_blocks;
  const std::vector<int64_t>& qsl = pb.query_start;
  const std::vector<int64_t>& lens = pb.seq_lens;
  const int32_t* bt = pb.block_table;
  // Token -> request, so (token, head) pairs can be spread over the pool.
  std::vector<int64_t> req_of(static_cast<size_t>(q.size(0)));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = qsl[size_t(b)]; t < qsl[size_t(b + 1)]; ++t) req_of[size_t(t)] = b;
  const int64_t group = hq / hkv, row = hkv * d;
  const int64_t kcs = int64_t(k_cache.itemsize()), vcs = int64_t(v_cache.itemsize());
  const char* kc = static_cast<const char*>(k_cache.data_ptr());
  const char* vc = static_cast<const char*>(v_cache.data_ptr());
  s.parallel_for(q.size(0) * hq, 1, [&](int64_t i0, int64_t i1) {
    std::vector<float> qv(static_cast<size_t>(d)), kv(static_cast<size_t>(d)),
        acc(static_cast<size_t>(d)), p;
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t t = i / hq, h = i % hq, b = req_of[size_t(t)], g = h / group;
      const int64_t q_len = qsl[size_t(b + 1)] - qsl[size_t(b)], ctx = lens[size_t(b)] - q_len;
      const int64_t n_keys = ctx + (t - qsl[size_t(b)]) + 1;
      load_row(qh.at(t, h), qh.dtype, d, qv.data());
      p.resize(size_t(n_keys));
      auto slot = [&](int64_t key) {
        return int64_t(bt[b * max_blocks + key / block_size]) * block_size + key % block_size;
      };
      float mx = -INFINITY;
      for (int64_t j = 0; j < n_keys; ++j) {
        load_row(kc + (slot(j) * row + g * d) * kcs, k_cache.dtype(), d, kv.data());
        float dot = 0.0f;
        for (int64_t e = 0; e < d; ++e) dot += qv[size_t(e)] * kv[size_t(e)];
        p[size_t(j)] = dot * scale;
        mx = std::max(mx, p[size_t(j)]);
      }
      float sum = 0.0f;
      for (float& x : p) sum += (x = std::exp(x - mx));
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j = 0; j < n_keys; ++j) {
        load_row(vc + (slot(j) * row + g * d) * vcs, v_cache.dtype(), d, kv.data());
        // Narrow out: the weight rounds to out's dtype before P.V (the fused kernels'
        // bf16 tensor-core P.V); the normaliser keeps the unrounded sum.
        const float w = round_to(p[size_t(j)], oh.dtype);
        for (int64_t e = 0; e < d; ++e) acc[size_t(e)] += w * kv[size_t(e)];
      }
      for (float& x : acc) x /= sum;
      store_row(acc.data(), d, oh.dtype, oh.at(t, h));
    }
  });
}

}  // namespace vt::cpu
