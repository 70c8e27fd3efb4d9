// The inline PTX every CUDA kernel family is written with (CUDA sources only), in one
// place: cp.async copies, ldmatrix loads, mma.sync products, griddepcontrol, an L2
// prefetch, the cluster barrier's halves and the tf32 conversion. Kernels call these and hold no
// asm of their own, so their logic reads without it, and a host emulation of the warp operations
// can stand in for this one file to run a kernel's source on the CPU.
//
// Variants that differ in what the compiler or the hardware may do are distinct
// functions, never a flag: the cache hint of a copy, `asm volatile` or not, and the
// "memory" clobbers are each as the kernel that introduced them had them. A clobber
// orders the instruction against the compiler's shared/global loads and stores: the
// cp.async waits and griddepcontrol need theirs to be correct (the data they publish is
// read by plain loads after them), so none may be dropped.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace vt::cuda::ptx {

// A generic pointer into shared memory as the 32-bit shared-window address PTX takes.
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return uint32_t(__cvta_generic_to_shared(p));
}

// --- cp.async: 16 bytes global -> shared, bypassing L1 (.cg), asynchronously; the
// destination is zero-filled when !valid (src is then not read, but must be a valid
// address expression). Completion is tracked by commit groups: a thread sees its copies
// after cp_async_wait, other threads only after a barrier that follows it.

__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(valid ? 16 : 0)
               : "memory");
}
// The same copy with the .L2::256B prefetch-size hint: L2 may fetch the 256 bytes around
// src with it (the skinny GEMM's weight stream, where the neighbouring lanes' 16-byte
// pieces follow).
__device__ __forceinline__ void cp_async16_l2_256b(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(valid ? 16 : 0)
               : "memory");
}
// Closes this thread's copies issued since the last commit into one group.
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// --- ldmatrix: four 8x8 b16 matrices from shared memory into the mma fragment layout;
// lanes 8i..8i+7 give the row addresses of matrix i, r[i] receives it. The "memory"
// clobber orders the load after the barrier that publishes the tile.

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}
// Each matrix transposed (the B operand from a row-major [k][n] tile).
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}

// --- mma.sync m16n8k16, bf16 or f16 in, f32 accumulate: c += a . b for one tile (A
// row-major 16x16, B 16x8 "col"). The element type is chosen by the last argument's type
// (a tag: `T()`).
//
// Plain asm: the compiler may schedule it like arithmetic (flash prefill, paged decode).
__device__ __forceinline__ void mma_m16n8k16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                             uint32_t b1, __nv_bfloat16) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void mma_m16n8k16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                             uint32_t b1, __half) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// The same instruction as `asm volatile` (treated as having side effects: never removed,
// merged or hoisted), T = __nv_bfloat16 or __half, the A registers one by one: the skinny
// GEMM's choice.
template <class T>
__device__ __forceinline__ void mma_m16n8k16_volatile(float (&c)[4], uint32_t a0, uint32_t a1,
                                                      uint32_t a2, uint32_t a3, uint32_t b0,
                                                      uint32_t b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
}

// --- tf32 (plain asm): x rounded to tf32 (nearest, ties away), as the b32 an mma takes.
__device__ __forceinline__ uint32_t to_tf32_rna(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}
// c += a . b for one mma.sync m16n8k8 tile, tf32 in, f32 accumulate (A row-major 16x8,
// B 8x8 "col"; fragment layout in gdn/chunk_mma.cuh).
__device__ __forceinline__ void mma_m16n8k8_tf32(float (&c)[4], const uint32_t (&a)[4],
                                                 const uint32_t (&b)[2]) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// --- griddepcontrol (sm_90, programmatic dependent launch): no-ops when the grid was not
// launched with a programmatic dependency. wait: every prerequisite grid complete and its
// memory visible; launch_dependents: this CTA allows the dependent grid to start.
__device__ __forceinline__ void grid_dependency_wait() {
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
}
__device__ __forceinline__ void grid_launch_dependents() {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

// A hint that brings the line at p into L2 (volatile, no clobber: it has no effect on
// what any load returns).
__device__ __forceinline__ void prefetch_l2(const void* p) {
  asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p));
}

// The thread-block cluster barrier split in two (sm_90): arrive without memory ordering,
// then wait. Every thread of the cluster's CTAs calls both, in this order, once per phase;
// a wait returns once every thread of the cluster has arrived. Before the first access
// to a peer's shared memory: the peer is then known to have started.
__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() {
  asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");
}

}  // namespace vt::cuda::ptx
