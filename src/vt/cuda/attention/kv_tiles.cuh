// What the tensor-core paged attention kernels (flash_prefill.cuh, paged_decode.cuh) share
// about their shared-memory K/V tiles (CUDA sources only): the swizzled tile layout and
// the copy of a tile of keys from the paged caches through the block table.
#pragma once

#include <cstdint>

#include "vt/cuda/attention/paged_attention.cuh"
#include "vt/cuda/ptx.cuh"

namespace vt::cuda::kv_tiles {

// Element offset of (row, col) in a swizzled [rows][D] tile: 16-byte chunk c of row r is
// stored at chunk c ^ (r & 7), so the eight rows an ldmatrix reads fall in distinct
// banks. col a multiple of 8 for the 16-byte accesses.
template <int D>
__device__ __forceinline__ int swz(int row, int col) {
  return row * D + ((((col >> 3) ^ (row & 7))) << 3) + (col & 7);
}

// Copies tiles of Keys keys of one request's kv head g, K and V, from the caches
// ([blocks, block_size, Hkv, D] of T, p.k_cache / p.v_cache) through the request's
// block-table row into swizzled [Keys][D] shared-memory tiles, by 16-byte cp.async
// (the caller commits and waits). Keys at or past k_end are zero-filled. Thread x of the
// Threads copies 16-byte chunk x % (D / 8) of keys x / (D / 8) + i * kKeyStep; the block
// of its first key takes one division per tile, the rest walk forward.
// Padded: the caches' rows hold params.head_dim elements (a multiple of 8, <= D) and the
// tile's chunks past it are zero-filled; otherwise head_dim is D.
template <int D, int Keys, int Threads, class T, bool Padded = false>
struct PagedKvTiles {
  static constexpr int kChunks = D / 8;  // 16-byte chunks per row
  static constexpr int kKeyStep = Threads / kChunks;
  static_assert(Threads % kChunks == 0 && Keys % kKeyStep == 0, "whole chunks per thread");

  const paged::Params& p;
  const int32_t* blocks;    // the request's block-table row
  const int dim;            // elements per cache row (D unless Padded)
  const int64_t cache_row;  // elements per slot
  const T* kc;
  const T* vc;
  const int g, k_end, first_key, col;

  __device__ __forceinline__ PagedKvTiles(const paged::Params& params, int b, int kv_head,
                                          int key_end)
      : p(params),
        blocks(params.block_table + int64_t(b) * params.max_blocks),
        dim(Padded ? params.head_dim : D),
        cache_row(int64_t(params.hkv) * dim),
        kc(static_cast<const T*>(params.k_cache)),
        vc(static_cast<const T*>(params.v_cache)),
        g(kv_head),
        k_end(key_end),
        first_key(threadIdx.x / kChunks),
        col((threadIdx.x % kChunks) * 8) {}

  // Keys [kt, kt + Keys) into kd and vd.
  __device__ __forceinline__ void load(int kt, T* kd, T* vd) const {
    int blk = (kt + first_key) / p.block_size, in_blk = (kt + first_key) - blk * p.block_size;
#pragma unroll
    for (int i = 0; i < Keys / kKeyStep; ++i) {
      const int j = first_key + i * kKeyStep;
      const bool valid = kt + j < k_end && (!Padded || col < dim);
      int64_t off = 0;
      if (valid)
        off = (int64_t(blocks[blk]) * p.block_size + in_blk) * cache_row + int64_t(g) * dim + col;
      ptx::cp_async16(ptx::smem_addr(kd + swz<D>(j, col)), kc + off, valid);
      ptx::cp_async16(ptx::smem_addr(vd + swz<D>(j, col)), vc + off, valid);
      for (in_blk += kKeyStep; in_blk >= p.block_size; in_blk -= p.block_size) ++blk;
    }
  }
};

}  // namespace vt::cuda::kv_tiles
