// What the CUDA moe_experts pieces share (cuda/moe/ only): the token -> expert
// permutation built on the device and the bf16 grouped GEMM launchers.
//
// The permutation (experts.cu, one block): counts per expert, their prefix sums, the
// entries (i = t * k + j) grouped by expert, and a tile table of (expert, first row,
// rows) with at most BM rows each, expert by expert. Rows of one expert are in no fixed
// order (an integer atomic places them): every row's result is computed alone (a fixed
// k order per output element, no split-K), so the order changes no value.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "vt/cuda/stream_state.h"
#include "vt/dtype.h"

namespace vt::cuda::moe {

// One M tile of the grouped GEMMs: `rows` (1..BM) permuted rows from `row0`, all routed
// to `expert`.
struct Tile {
  int32_t expert, row0, rows, pad;
};

// Device arrays of one moe_experts call.
struct Permutation {
  const int32_t* entries;  // [T * k]: permuted row r holds entry entries[r] = t * k + j
  const Tile* tiles;       // [max_tiles]: the first *num_tiles are valid
  const int32_t* num_tiles;
  int64_t max_tiles;  // the grid bound: min(E, T k) + T k / BM
};

// Tile rows of the regimes (grouped_gemm.cu): decode tiles hold the few rows an expert
// gets from a small batch, prefill tiles are tensor-core sized.
enum class Regime { kDecode, kMid, kPrefill };
int tile_rows(Regime r);
// The regime from T k and E alone (the rows an active expert averages), so a graph
// captured for T runs the same kernels at every replay.
Regime pick_regime(int64_t tk, int64_t E);

// hid[r, c] (permuted rows, [T k, I]) = R(R(silu(g)) * u) with g, u = R(x[t] . gate_up[e,
// c]), R(x[t] . gate_up[e, I + c]) for r's entry i = t k + j and its tile's expert e.
// x [T, H], gate_up [E, 2I, H], all bf16; H % 8 == 0, I % 8 == 0, 16-byte aligned rows.
void gate_up_swiglu(StreamState& st, Regime r, const Permutation& p, const __nv_bfloat16* x,
                    const __nv_bfloat16* gate_up, __nv_bfloat16* hid, int64_t k_top, int64_t H,
                    int64_t I);

// y[i, n] ([T k, H], rows by entry i) = R(R(hid[r] . down[e, n]) * w[i]) for permuted
// row r holding entry i; w = topk_weights (f32/bf16/f16, [T k]).
void down_weighted(StreamState& st, Regime r, const Permutation& p, const __nv_bfloat16* hid,
                   const __nv_bfloat16* down, const void* w, DType w_dtype, __nv_bfloat16* y,
                   int64_t H, int64_t I);

}  // namespace vt::cuda::moe
