// The grouped GEMM launchers of moe_experts (experts.cuh) and the tile shapes per regime.
//
// decode (an active expert averages <= 16 rows: T <= 64 at k 8, E 256): 16-row tiles, 64
//   weight rows per CTA of 4 warps, an 8-deep ring (80 KB: two CTAs per SM, up to 112 KB
//   of weights in flight per SM, 56 KB at T 1 where the 128 gate_up CTAs take one SM
//   each). The kernel is a weight stream: each touched expert's weights are read once per
//   16 of its rows, by (expert, N-tile) CTAs;
// mid (<= 64 rows): 64 x 128 tiles, 8 warps of 32 x 32, 4 stages (96 KB, 2 CTAs per SM);
// prefill: 128 x 128 tiles, 8 warps of 64 x 32, 3 stages (96 KB, 2 CTAs per SM at 128
//   registers: the kernel's k16 loop is not unrolled, else ptxas spills ~100 bytes).
#include <algorithm>
#include <atomic>

#include "vt/cuda/check.h"
#include "vt/cuda/moe/grouped_gemm.cuh"

namespace vt::cuda::moe {

namespace {

using DecodeTiles = TileConfig<16, 64, 16, 16, 8, 2>;
using MidTiles = TileConfig<64, 128, 32, 32, 4, 2>;
using PrefillTiles = TileConfig<128, 128, 64, 32, 3, 2>;

template <class C, bool kSwiGLU>
void launch(StreamState& st, const GemmArgs& g) {
  // CTAs per tile along the output columns: hid columns for gate_up (BN/2 gate + BN/2 up
  // weight rows), H columns for down.
  const int64_t cols = kSwiGLU ? C::BN / 2 : C::BN;
  const int64_t nx = (int64_t(g.N) + cols - 1) / cols;
  VT_CHECK(g.perm.max_tiles <= 65535 && nx <= int64_t(0x7fffffff),
           "moe_experts (CUDA): ", g.perm.max_tiles, " tiles exceed the grid");
  auto* kernel = grouped_gemm_kernel<C, kSwiGLU>;
  // The opt-in above 48 KB, once per device (bit d of `opted`; devices past 63 every call).
  static std::atomic<uint64_t> opted{0};
  const uint64_t bit = st.device < 64 ? uint64_t(1) << st.device : 0;
  if (C::kSmemBytes > (48 << 10) && (bit == 0 || !(opted.load() & bit))) {
    VT_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::kSmemBytes));
    opted.fetch_or(bit);
  }
  kernel<<<dim3(unsigned(nx), unsigned(g.perm.max_tiles)), C::kThreads, C::kSmemBytes, st.stream>>>(
      g);
  VT_CUDA_CHECK_LAUNCH("grouped_gemm_kernel");
}

template <bool kSwiGLU>
void launch_regime(StreamState& st, Regime r, const GemmArgs& g) {
  switch (r) {
    case Regime::kDecode:
      return launch<DecodeTiles, kSwiGLU>(st, g);
    case Regime::kMid:
      return launch<MidTiles, kSwiGLU>(st, g);
    case Regime::kPrefill:
      return launch<PrefillTiles, kSwiGLU>(st, g);
  }
}

}  // namespace

int tile_rows(Regime r) {
  switch (r) {
    case Regime::kDecode:
      return DecodeTiles::BM;
    case Regime::kMid:
      return MidTiles::BM;
    case Regime::kPrefill:
      return PrefillTiles::BM;
  }
  return PrefillTiles::BM;
}

Regime pick_regime(int64_t tk, int64_t E) {
  const int64_t active = std::min(E, tk);  // at most this many experts get rows
  const int64_t avg = (tk + active - 1) / active;
  if (avg <= DecodeTiles::BM) return Regime::kDecode;
  if (avg <= MidTiles::BM) return Regime::kMid;
  return Regime::kPrefill;
}

void gate_up_swiglu(StreamState& st, Regime r, const Permutation& p, const __nv_bfloat16* x,
                    const __nv_bfloat16* gate_up, __nv_bfloat16* hid, int64_t k_top, int64_t H,
                    int64_t I) {
  GemmArgs g{x, gate_up, hid, p, nullptr, DType::kF32, int(k_top), int(H), int(I)};
  launch_regime<true>(st, r, g);
}

void down_weighted(StreamState& st, Regime r, const Permutation& p, const __nv_bfloat16* hid,
                   const __nv_bfloat16* down, const void* w, DType w_dtype, __nv_bfloat16* y,
                   int64_t H, int64_t I) {
  GemmArgs g{hid, down, y, p, w, w_dtype, 1, int(I), int(H)};
  launch_regime<false>(st, r, g);
}

}  // namespace vt::cuda::moe
