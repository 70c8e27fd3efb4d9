// CPU reference kernels of the encoder ops: every row widened to f32, computed in f32,
// stored once (the oracle's F.layer_norm / F.gelu / SDPA on bf16 tensors compute in f32).
#include "vt/cpu/encoder.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "vt/cpu/rowio.h"

namespace vt::cpu {

namespace {

int64_t grain_for(int64_t cols) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(cols, 1)); }

const char* head_ptr(const HeadsView& h, int64_t t, int64_t head) {
  return static_cast<const char*>(h.data) +
         (t * h.token_stride + head * h.head_stride) * int64_t(dtype_size(h.dtype));
}

}  // namespace

void layer_norm(Stream& s, const Rows& x, const Tensor& w, const Tensor& b, float eps,
                const Rows& out) {
  const int64_t d = x.cols;
  std::vector<float> wf(static_cast<size_t>(d)), bf(static_cast<size_t>(d));
  load_row(w.data_ptr(), w.dtype(), d, wf.data());
  load_row(b.data_ptr(), b.dtype(), d, bf.data());
  s.parallel_for(x.rows, grain_for(d), [&](int64_t r0, int64_t r1) {
    std::vector<float> a(static_cast<size_t>(d));
    for (int64_t r = r0; r < r1; ++r) {
      load_row(x.row(r), x.dtype, d, a.data());
      // Two passes: the mean, then the biased variance around it.
      float sum = 0.0f;
      for (int64_t i = 0; i < d; ++i) sum += a[size_t(i)];
      const float mean = sum / float(d);
      float ss = 0.0f;
      for (int64_t i = 0; i < d; ++i) {
        const float c = a[size_t(i)] - mean;
        ss += c * c;
      }
      const float rstd = 1.0f / std::sqrt(ss / float(d) + eps);
      for (int64_t i = 0; i < d; ++i)
        a[size_t(i)] = (a[size_t(i)] - mean) * rstd * wf[size_t(i)] + bf[size_t(i)];
      store_row(a.data(), d, out.dtype, out.row(r));
    }
  });
}

void gelu(Stream& s, const Rows& x, GeluKind kind, const Rows& out) {
  const int64_t d = x.cols;
  s.parallel_for(x.rows, grain_for(d), [&](int64_t r0, int64_t r1) {
    std::vector<float> a(static_cast<size_t>(d));
    for (int64_t r = r0; r < r1; ++r) {
      load_row(x.row(r), x.dtype, d, a.data());
      if (kind == GeluKind::kTanh) {
        const float k = 0.7978845608028654f;  // sqrt(2 / pi)
        for (float& v : a) v = 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
      } else {
        const float k = 0.7071067811865476f;  // 1 / sqrt(2)
        for (float& v : a) v = 0.5f * v * (1.0f + std::erf(v * k));
      }
      store_row(a.data(), d, out.dtype, out.row(r));
    }
  });
}

void weighted_gather(Stream& s, const Rows& table, const Tensor& idx, const Tensor& weight,
                     const Tensor& out) {
  const int64_t n = idx.size(0), taps = idx.size(1), d = table.cols, v = table.rows;
  const int32_t* ix = idx.data<int32_t>();
  const float* wt = weight.data<float>();
  for (int64_t i = 0; i < n * taps; ++i)
    VT_CHECK(ix[i] >= 0 && ix[i] < v, "weighted_gather: idx[", i / taps, ", ", i % taps,
             "] = ", ix[i], " is not a row of the table (", v, " rows)");
  char* o = static_cast<char*>(out.data_ptr());
  const size_t osz = out.itemsize();
  s.parallel_for(n, grain_for(d * taps), [&](int64_t r0, int64_t r1) {
    std::vector<float> acc(static_cast<size_t>(d)), row(static_cast<size_t>(d));
    for (int64_t r = r0; r < r1; ++r) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t k = 0; k < taps; ++k) {
        load_row(table.row(ix[r * taps + k]), table.dtype, d, row.data());
        const float wk = wt[r * taps + k];
        for (int64_t c = 0; c < d; ++c) acc[size_t(c)] += row[size_t(c)] * wk;
      }
      store_row(acc.data(), d, out.dtype(), o + size_t(r * d) * osz);
    }
  });
}

void segment_attention(Stream& s, const HeadsView& q, const HeadsView& k, const HeadsView& v,
                       const std::vector<int32_t>& cu_seqlens, float scale, const HeadsView& out) {
  const int64_t heads = q.heads, hd = q.head_dim;
  // Work items: (segment, head, block of kQueries queries); each widens its segment's
  // K and V of that head once.
  constexpr int64_t kQueries = 64;
  struct Item {
    int64_t seg, head, q0;
  };
  std::vector<Item> items;
  for (size_t sg = 0; sg + 1 < cu_seqlens.size(); ++sg)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t = cu_seqlens[sg]; t < cu_seqlens[sg + 1]; t += kQueries)
        items.push_back({int64_t(sg), h, t});
  s.parallel_for(int64_t(items.size()), 1, [&](int64_t i0, int64_t i1) {
    std::vector<float> kf, vf, p, qf(static_cast<size_t>(hd)), acc(static_cast<size_t>(hd));
    for (int64_t it = i0; it < i1; ++it) {
      const Item& item = items[size_t(it)];
      const int64_t b = cu_seqlens[size_t(item.seg)], e = cu_seqlens[size_t(item.seg) + 1];
      const int64_t len = e - b;
      kf.resize(size_t(len * hd));
      vf.resize(size_t(len * hd));
      p.resize(static_cast<size_t>(len));
      for (int64_t j = 0; j < len; ++j) {
        load_row(head_ptr(k, b + j, item.head), k.dtype, hd, kf.data() + j * hd);
        load_row(head_ptr(v, b + j, item.head), v.dtype, hd, vf.data() + j * hd);
      }
      const int64_t qe = std::min(e, item.q0 + kQueries);
      for (int64_t t = item.q0; t < qe; ++t) {
        load_row(head_ptr(q, t, item.head), q.dtype, hd, qf.data());
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < len; ++j) {
          const float* kr = kf.data() + j * hd;
          float dot = 0.0f;
          for (int64_t c = 0; c < hd; ++c) dot += qf[size_t(c)] * kr[c];
          p[size_t(j)] = dot * scale;
          mx = std::max(mx, p[size_t(j)]);
        }
        float sum = 0.0f;
        for (float& pj : p) {
          pj = std::exp(pj - mx);
          sum += pj;
        }
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int64_t j = 0; j < len; ++j) {
          const float* vr = vf.data() + j * hd;
          const float pj = p[size_t(j)];
          for (int64_t c = 0; c < hd; ++c) acc[size_t(c)] += pj * vr[c];
        }
        const float inv = 1.0f / sum;
        for (float& a : acc) a *= inv;
        char* dst =
            static_cast<char*>(out.data) +
            (t * out.token_stride + item.head * out.head_stride) * int64_t(dtype_size(out.dtype));
        store_row(acc.data(), hd, out.dtype, dst);
      }
    }
  });
}

}  // namespace vt::cpu
