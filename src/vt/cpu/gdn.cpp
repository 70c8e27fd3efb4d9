// The CPU reference of the Gated DeltaNet ops (vt/ops/gdn.h).
#include "vt/cpu/gdn.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "vt/cpu/rounding.h"
#include "vt/cpu/rowio.h"
#include "vt/ops/gdn.h"

namespace vt::cpu {

namespace {

// [T, heads, D] with head_dim stride 1.
struct Heads {
  const char* data;
  DType dtype;
  int64_t token_stride, head_stride;
  const char* at(int64_t t, int64_t h) const {
    return data + (t * token_stride + h * head_stride) * int64_t(dtype_size(dtype));
  }
};

Heads heads_of(const Tensor& t) {
  return {static_cast<const char*>(t.data_ptr()), t.dtype(), t.stride(0), t.stride(1)};
}

// What the two delta-rule forms share.
struct DeltaArgs {
  Heads q, k, v;
  const float *g, *beta;
  float* state;
  const Varlen& req;
  int64_t hv, hk, dk, dv;
};

DeltaArgs delta_args(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g,
                     const Tensor& beta, const Varlen& req, const Tensor& state) {
  return {heads_of(q), heads_of(k), heads_of(v), g.data<float>(), beta.data<float>(),
          state.data<float>(), req, v.size(1), q.size(1), q.size(2), v.size(2)};
}

// Runs fn(b, h) over every (request, value head) on the pool.
template <class F>
void for_request_heads(Stream& s, const DeltaArgs& a, F&& fn) {
  s.parallel_for(a.req.batch() * a.hv, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) fn(i / a.hv, i % a.hv);
  });
}

float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

}  // namespace

void causal_conv1d_silu(Stream& s, const Tensor& x, const Tensor& w, const Varlen& req,
                        const Tensor& conv_state, const Tensor& out) {
  const int64_t C = x.size(1), K = w.size(1), H = K - 1;
  std::vector<float> wf(static_cast<size_t>(C * K));
  load_row(w.data_ptr(), w.dtype(), C * K, wf.data());
  const int64_t xs = int64_t(x.itemsize()), os = int64_t(out.itemsize());
  for (int64_t b = 0; b < req.batch(); ++b) {
    const int64_t n = req.len(b), t0 = req.start[size_t(b)];
    if (n == 0) continue;
    // win rows: H state rows, then the request's n tokens; f32 [H + n, C].
    std::vector<float> win(static_cast<size_t>((H + n) * C)), res(static_cast<size_t>(n * C));
    float* st = conv_state.data<float>() + req.slot[size_t(b)] * H * C;
    std::copy(st, st + H * C, win.begin());
    for (int64_t t = 0; t < n; ++t)
      load_row(static_cast<const char*>(x.data_ptr()) + (t0 + t) * x.stride(0) * xs, x.dtype(),
                    C, win.data() + (H + t) * C);
    s.parallel_for(C, 64, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c)
        for (int64_t t = 0; t < n; ++t) {
          float acc = 0.0f;
          for (int64_t j = 0; j < K; ++j) acc += wf[size_t(c * K + j)] * win[size_t((t + j) * C + c)];
          acc = round_to(acc, out.dtype());  // narrow out: the conv output rounds before SiLU
          res[size_t(t * C + c)] = acc / (1.0f + std::exp(-acc));
        }
    });
    for (int64_t t = 0; t < n; ++t)
      store_row(res.data() + t * C, C, out.dtype(),
                     static_cast<char*>(out.data_ptr()) + (t0 + t) * C * os);
    std::copy(win.end() - H * C, win.end(), st);
  }
}

void gdn_gates(Stream& s, const Rows& ar, const Rows& br, const Tensor& A_log, const Tensor& dt_bias,
               DType beta_round, const Tensor& g, const Tensor& beta) {
  const int64_t T = ar.rows, hv = ar.cols;
  std::vector<float> neg_a(static_cast<size_t>(hv)), bias(static_cast<size_t>(hv));
  load_row(A_log.data_ptr(), A_log.dtype(), hv, neg_a.data());
  load_row(dt_bias.data_ptr(), dt_bias.dtype(), hv, bias.data());
  for (float& v : neg_a) v = -std::exp(v);
  s.parallel_for(T, 64, [&](int64_t t0, int64_t t1) {
    std::vector<float> av(static_cast<size_t>(hv)), bv(static_cast<size_t>(hv));
    for (int64_t t = t0; t < t1; ++t) {
      load_row(ar.row(t), ar.dtype, hv, av.data());
      load_row(br.row(t), br.dtype, hv, bv.data());
      for (int64_t h = 0; h < hv; ++h) {
        g.data<float>()[t * hv + h] = neg_a[size_t(h)] * softplus(av[size_t(h)] + bias[size_t(h)]);
        // sigmoid(b) rounds to beta_round (the oracle's bf16 beta, qwen3_5.md §8.4).
        beta.data<float>()[t * hv + h] =
            round_to(1.0f / (1.0f + std::exp(-bv[size_t(h)])), beta_round);
      }
    }
  });
}

void gated_delta_rule_recurrent(Stream& s, const Tensor& q, const Tensor& k, const Tensor& v,
                                const Tensor& g, const Tensor& beta, float scale, const Varlen& req,
                                const Tensor& state, const Tensor& out) {
  const DeltaArgs a = delta_args(q, k, v, g, beta, req, state);
  const int64_t dk = a.dk, dv = a.dv, ratio = a.hv / a.hk;
  char* o = static_cast<char*>(out.data_ptr());
  const int64_t os = int64_t(out.itemsize());
  for_request_heads(s, a, [&](int64_t b, int64_t h) {
    float* S = a.state + (a.req.slot[size_t(b)] * a.hv + h) * dk * dv;
    std::vector<float> qv(static_cast<size_t>(dk)), kv(static_cast<size_t>(dk)), vv(static_cast<size_t>(dv)), u(static_cast<size_t>(dv)), ov(static_cast<size_t>(dv));
    for (int64_t t = a.req.start[size_t(b)]; t < a.req.start[size_t(b + 1)]; ++t) {
      load_row(a.q.at(t, h / ratio), a.q.dtype, dk, qv.data());
      load_row(a.k.at(t, h / ratio), a.k.dtype, dk, kv.data());
      load_row(a.v.at(t, h), a.v.dtype, dv, vv.data());
      const float decay = std::exp(a.g[t * a.hv + h]), bt = a.beta[t * a.hv + h];
      for (float& x : qv) x *= scale;
      for (int64_t i = 0; i < dk * dv; ++i) S[i] *= decay;
      std::fill(u.begin(), u.end(), 0.0f);
      for (int64_t i = 0; i < dk; ++i)
        for (int64_t e = 0; e < dv; ++e) u[size_t(e)] += S[i * dv + e] * kv[size_t(i)];
      for (int64_t e = 0; e < dv; ++e) u[size_t(e)] = bt * (vv[size_t(e)] - u[size_t(e)]);
      std::fill(ov.begin(), ov.end(), 0.0f);
      for (int64_t i = 0; i < dk; ++i)
        for (int64_t e = 0; e < dv; ++e) {
          S[i * dv + e] += kv[size_t(i)] * u[size_t(e)];
          ov[size_t(e)] += S[i * dv + e] * qv[size_t(i)];
        }
      store_row(ov.data(), dv, out.dtype(), o + (t * a.hv + h) * dv * os);
    }
  });
}

void gated_delta_rule_chunked(Stream& s, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& g, const Tensor& beta, float scale, const Varlen& req,
                              const Tensor& state, const Tensor& out) {
  const DeltaArgs a = delta_args(q, k, v, g, beta, req, state);
  const int64_t dk = a.dk, dv = a.dv, ratio = a.hv / a.hk, C = kGdnChunkSize;
  char* o = static_cast<char*>(out.data_ptr());
  const int64_t os = int64_t(out.itemsize());
  for_request_heads(s, a, [&](int64_t b, int64_t h) {
    float* S = a.state + (a.req.slot[size_t(b)] * a.hv + h) * dk * dv;
    // Per chunk: Q, K [n, dk]; U [n, dv]: v, then the true updates u'.
    std::vector<float> Q(static_cast<size_t>(C * dk)), K(static_cast<size_t>(C * dk));
    std::vector<float> U(static_cast<size_t>(C * dv));
    std::vector<float> gam(static_cast<size_t>(C)), bt(static_cast<size_t>(C)), A(static_cast<size_t>(C * C)), ov(static_cast<size_t>(dv));
    for (int64_t c0 = a.req.start[size_t(b)]; c0 < a.req.start[size_t(b + 1)]; c0 += C) {
      const int64_t n = std::min(C, a.req.start[size_t(b + 1)] - c0);
      float cum = 0.0f;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t t = c0 + i;
        load_row(a.q.at(t, h / ratio), a.q.dtype, dk, &Q[size_t(i * dk)]);
        load_row(a.k.at(t, h / ratio), a.k.dtype, dk, &K[size_t(i * dk)]);
        load_row(a.v.at(t, h), a.v.dtype, dv, &U[size_t(i * dv)]);
        for (int64_t d = 0; d < dk; ++d) Q[size_t(i * dk + d)] *= scale;
        gam[size_t(i)] = cum += a.g[t * a.hv + h];
        bt[size_t(i)] = a.beta[t * a.hv + h];
      }
      // A_ij = beta_i (k_i . k_j) exp(gam_i - gam_j) for j < i. The true per-token updates
      // solve (I + A) U' = diag(beta) (V - diag(exp(gam)) K S0) (the WY form of §8.7 with
      // W S0 folded into the right-hand side), by forward substitution row by row.
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < i; ++j) {
          float dot = 0.0f;
          for (int64_t d = 0; d < dk; ++d) dot += K[size_t(i * dk + d)] * K[size_t(j * dk + d)];
          A[size_t(i * C + j)] = bt[size_t(i)] * dot * std::exp(gam[size_t(i)] - gam[size_t(j)]);
        }
        const float ei = std::exp(gam[size_t(i)]);
        for (int64_t e = 0; e < dv; ++e) {
          float ks = 0.0f;  // (S0^T k_i)[e]
          for (int64_t d = 0; d < dk; ++d) ks += S[d * dv + e] * K[size_t(i * dk + d)];
          U[size_t(i * dv + e)] = bt[size_t(i)] * (U[size_t(i * dv + e)] - ei * ks);
        }
        for (int64_t j = 0; j < i; ++j) {
          const float aij = A[size_t(i * C + j)];
          for (int64_t e = 0; e < dv; ++e) U[size_t(i * dv + e)] -= aij * U[size_t(j * dv + e)];
        }
      }
      // O_i = exp(gam_i) q_i S0 + sum_{j <= i} (q_i . k_j) exp(gam_i - gam_j) U'_j.
      for (int64_t i = 0; i < n; ++i) {
        std::fill(ov.begin(), ov.end(), 0.0f);
        for (int64_t d = 0; d < dk; ++d) {
          const float qd = Q[size_t(i * dk + d)];
          for (int64_t e = 0; e < dv; ++e) ov[size_t(e)] += qd * S[d * dv + e];
        }
        const float ei = std::exp(gam[size_t(i)]);
        for (float& x : ov) x *= ei;
        for (int64_t j = 0; j <= i; ++j) {
          float dot = 0.0f;
          for (int64_t d = 0; d < dk; ++d) dot += Q[size_t(i * dk + d)] * K[size_t(j * dk + d)];
          const float w = dot * std::exp(gam[size_t(i)] - gam[size_t(j)]);
          for (int64_t e = 0; e < dv; ++e) ov[size_t(e)] += w * U[size_t(j * dv + e)];
        }
        store_row(ov.data(), dv, out.dtype(), o + ((c0 + i) * a.hv + h) * dv * os);
      }
      // S <- exp(gam_n) S0 + sum_j exp(gam_n - gam_j) k_j U'_j^T.
      const float last = gam[size_t(n - 1)], en = std::exp(last);
      for (int64_t i = 0; i < dk * dv; ++i) S[i] *= en;
      for (int64_t j = 0; j < n; ++j) {
        const float w = std::exp(last - gam[size_t(j)]);
        for (int64_t d = 0; d < dk; ++d) {
          const float kd = w * K[size_t(j * dk + d)];
          for (int64_t e = 0; e < dv; ++e) S[d * dv + e] += kd * U[size_t(j * dv + e)];
        }
      }
    }
  });
}

void gated_rms_norm(Stream& s, const Rows& xr, const Rows& zr, const Tensor& w, float eps,
                    const Rows& outr) {
  const int64_t d = xr.cols;
  std::vector<float> wf(static_cast<size_t>(d));
  load_row(w.data_ptr(), w.dtype(), d, wf.data());
  s.parallel_for(xr.rows, std::max<int64_t>(1, 8192 / d), [&](int64_t r0, int64_t r1) {
    std::vector<float> a(static_cast<size_t>(d)), zz(static_cast<size_t>(d));
    for (int64_t r = r0; r < r1; ++r) {
      load_row(xr.row(r), xr.dtype, d, a.data());
      load_row(zr.row(r), zr.dtype, d, zz.data());
      float ss = 0.0f;
      for (float v : a) ss += v * v;
      const float inv = 1.0f / std::sqrt(ss / float(d) + eps);
      const DType dt = outr.dtype;
      for (int64_t i = 0; i < d; ++i) {
        const float zi = zz[size_t(i)];
        // Narrow out: the normalised value and its product with w round (HF's
        // `w * x.to(bf16)`), then the f32 silu(z) gate, then the store (qwen3_5.md §5.2).
        const float n = round_to(round_to(a[size_t(i)] * inv, dt) * wf[size_t(i)], dt);
        a[size_t(i)] = is_narrow(dt) ? n * (zi / (1.0f + std::exp(-zi)))
                                     : a[size_t(i)] * inv * wf[size_t(i)] * (zi / (1.0f + std::exp(-zi)));
      }
      store_row(a.data(), d, outr.dtype, outr.row(r));
    }
  });
}

}  // namespace vt::cpu
