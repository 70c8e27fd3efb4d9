// CPU linear: out = x . w^T with f32 accumulation.
//
// Kernel choice (measured with bench/vt_gemm_bench.cpp, numbers in docs/STATUS.md):
// a register-tiled kernel of our own rather than OpenBLAS. Both operands are read
// along K (w is PyTorch's [out, in]), so a tile of MR x-rows by NR w-rows keeps
// MR*NR vector accumulators and needs no packing; bf16/f16 weights are widened
// into a per-task f32 block of kNB rows (on the fly, so weights stay half size in
// memory; the benchmark compares against weights widened at load). AVX2+FMA is
// used when the CPU has it (checked at run time), a portable loop otherwise.
#include <cpuid.h>
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "vt/cpu/kernels.h"
#include "vt/cpu/rowio.h"

namespace vt::cpu {

namespace {

constexpr int kMR = 4;         // x rows per tile
constexpr int kNR = 2;         // w rows per tile
constexpr int64_t kNB = 16;    // w rows widened per task
constexpr int64_t kMB = 64;    // x rows per task

using TileFn = void (*)(const float* const* x, const float* const* w, int64_t k, float* res);

// res[i * NR + j] = sum_k x[i][k] * w[j][k], portable: 8 independent partial sums per
// dot product so the compiler can vectorise without reassociating.
template <int MR, int NR>
void tile_generic(const float* const* x, const float* const* w, int64_t k, float* res) {
  float acc[MR][NR][8] = {};
  int64_t kk = 0;
  for (; kk + 8 <= k; kk += 8)
    for (int i = 0; i < MR; ++i)
      for (int j = 0; j < NR; ++j)
        for (int l = 0; l < 8; ++l) acc[i][j][l] += x[i][kk + l] * w[j][kk + l];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) {
      float t = 0.0f;
      for (int l = 0; l < 8; ++l) t += acc[i][j][l];
      for (int64_t r = kk; r < k; ++r) t += x[i][r] * w[j][r];
      res[i * NR + j] = t;
    }
}

template <int MR, int NR>
__attribute__((target("avx2,fma"))) void tile_avx2(const float* const* x, const float* const* w,
                                                   int64_t k, float* res) {
  __m256 acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_setzero_ps();
  int64_t kk = 0;
  for (; kk + 8 <= k; kk += 8) {
    __m256 wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = _mm256_loadu_ps(w[j] + kk);
    for (int i = 0; i < MR; ++i) {
      __m256 xv = _mm256_loadu_ps(x[i] + kk);
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_fmadd_ps(xv, wv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) {
      __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc[i][j]), _mm256_extractf128_ps(acc[i][j], 1));
      h = _mm_add_ps(h, _mm_movehl_ps(h, h));
      h = _mm_add_ss(h, _mm_movehdup_ps(h));
      float t = _mm_cvtss_f32(h);
      for (int64_t r = kk; r < k; ++r) t += x[i][r] * w[j][r];
      res[i * NR + j] = t;
    }
}

// [mr - 1][nr - 1] -> the tile function for a (possibly partial) tile.
struct TileTable {
  TileFn fn[kMR][kNR];
};
template <bool kAvx2>
constexpr TileTable make_table() {
  if constexpr (kAvx2) {
    return {{{tile_avx2<1, 1>, tile_avx2<1, 2>}, {tile_avx2<2, 1>, tile_avx2<2, 2>},
             {tile_avx2<3, 1>, tile_avx2<3, 2>}, {tile_avx2<4, 1>, tile_avx2<4, 2>}}};
  } else {
    return {{{tile_generic<1, 1>, tile_generic<1, 2>}, {tile_generic<2, 1>, tile_generic<2, 2>},
             {tile_generic<3, 1>, tile_generic<3, 2>}, {tile_generic<4, 1>, tile_generic<4, 2>}}};
  }
}

const TileTable& tiles() {
  static const TileTable table = (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
                                     ? make_table<true>()
                                     : make_table<false>();
  return table;
}

// clang 14's __builtin_cpu_supports does not know "f16c": ask cpuid (leaf 1, ecx bit 29).
bool has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
}

__attribute__((target("avx2,f16c"))) void widen_avx2(const void* src, DType dt, int64_t n, float* dst) {
  int64_t i = 0;
  if (dt == DType::kBF16) {
    const auto* p = static_cast<const uint16_t*>(src);
    for (; i + 8 <= n; i += 8) {
      __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
      __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
      _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(w));
    }
  } else if (dt == DType::kF16) {
    const auto* p = static_cast<const uint16_t*>(src);
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i))));
  }
  load_row(static_cast<const char*>(src) + i * int64_t(dtype_size(dt)), dt, n - i, dst + i);
}

void widen(const void* src, DType dt, int64_t n, float* dst) {
  static const bool fast = __builtin_cpu_supports("avx2") && has_f16c();
  if (fast) {
    widen_avx2(src, dt, n, dst);
  } else {
    load_row(src, dt, n, dst);
  }
}

}  // namespace

void linear(Stream& s, const Rows& x, const Rows& w, const Tensor& bias, const Rows& out) {
  const int64_t m = x.rows, n = w.rows, k = x.cols;
  if (m == 0 || n == 0) return;
  // x widened once (it is small next to w); f32 x is used in place.
  std::vector<float> xbuf;
  if (x.dtype != DType::kF32) {
    xbuf.resize(size_t(m * k));
    s.parallel_for(m, 1, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) widen(x.row(r), x.dtype, k, xbuf.data() + r * k);
    });
  }
  const auto x_row = [&](int64_t r) {
    return xbuf.empty() ? static_cast<const float*>(x.row(r)) : xbuf.data() + r * k;
  };
  std::vector<float> bf;
  if (bias.defined()) {
    bf.resize(size_t(n));
    load_row(bias.data_ptr(), bias.dtype(), n, bf.data());
  }
  const TileTable& table = tiles();
  const int64_t n_blocks = (n + kNB - 1) / kNB, m_blocks = (m + kMB - 1) / kMB;
  s.parallel_for(n_blocks * m_blocks, 1, [&](int64_t t0, int64_t t1) {
    std::vector<float> wbuf, obuf(static_cast<size_t>(kMB * kNB));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n0 = (t % n_blocks) * kNB, n1 = std::min(n, n0 + kNB);
      const int64_t m0 = (t / n_blocks) * kMB, m1 = std::min(m, m0 + kMB);
      const float* wrow[kNB];
      if (w.dtype == DType::kF32) {
        for (int64_t j = n0; j < n1; ++j) wrow[j - n0] = static_cast<const float*>(w.row(j));
      } else {
        wbuf.resize(size_t(kNB * k));
        for (int64_t j = n0; j < n1; ++j) {
          widen(w.row(j), w.dtype, k, wbuf.data() + (j - n0) * k);
          wrow[j - n0] = wbuf.data() + (j - n0) * k;
        }
      }
      for (int64_t i = m0; i < m1; i += kMR) {
        const int mr = int(std::min<int64_t>(kMR, m1 - i));
        const float* xrow[kMR];
        for (int a = 0; a < mr; ++a) xrow[a] = x_row(i + a);
        for (int64_t j = n0; j < n1; j += kNR) {
          const int nr = int(std::min<int64_t>(kNR, n1 - j));
          float res[kMR * kNR];
          table.fn[mr - 1][nr - 1](xrow, wrow + (j - n0), k, res);
          for (int a = 0; a < mr; ++a)
            for (int b = 0; b < nr; ++b)
              obuf[size_t((i - m0 + a) * kNB + (j - n0 + b))] = res[a * nr + b];
        }
      }
      for (int64_t i = m0; i < m1; ++i) {
        float* row = obuf.data() + (i - m0) * kNB;
        if (!bf.empty())
          for (int64_t j = n0; j < n1; ++j) row[j - n0] += bf[size_t(j)];
        char* dst = static_cast<char*>(out.row(i)) + n0 * int64_t(dtype_size(out.dtype));
        store_row(row, n1 - n0, out.dtype, dst);
      }
    }
  });
}

}  // namespace vt::cpu
