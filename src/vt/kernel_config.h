// vt::KernelConfig: the kernel switches of the CUDA backend, one typed field each.
//
// A vt::Stream owns one (vt/stream.h); a CUDA op arm reads the switches from the stream it
// runs on, at each call, so a test or benchmark changes them between calls with
// Stream::set_kernel_config (a captured graph keeps what its capture chose). A
// default-constructed config is the shipped behaviour; KernelConfig::from_env() is the one
// place vt reads the environment. CPU streams carry a config too and ignore it. The
// switches exist so that a kernel can be compared with the one the rule would not pick,
// in one build, and so that a kernel that fails on a new GPU can be turned off
// (docs/KERNELS.md, "Switches").
#pragma once

#include <string>

namespace vt {

// A tri-state switch: the measured rule (kAuto), or forced on / off.
enum class Toggle { kAuto, kOn, kOff };

// Which kernel takes decode attention steps whose operands the tensor-core kernels take.
enum class AttnDecodeKernel {
  kTensorCores,  // paged_decode (the rule of vt/cuda/attention.h)
  kCudaCores,    // the CUDA-core paged_attention kernel that f32 and mixed dtypes take
};

// Which kernel gated_delta_rule_recurrent runs where both apply (Dv % 4 == 0 and a 16-byte
// aligned state; otherwise the warp kernel runs whatever this says).
enum class GdnDecodeKernel {
  kRows,  // delta_rule_rows_kernel, 4 warps per 32 value columns
  kWarp,  // delta_rule_warp_kernel, one warp per 32 value columns
};

struct KernelConfig {
  // VTLLM_PDL=auto|1|0: programmatic dependent launch, only ever while the stream is
  // capturing a CUDA graph. kAuto: the skinny GEMM is PDL-launched, the small kernels of
  // vt/cuda/launch.cuh plainly (measured on the H200: their PDL made the batch-1 step
  // slower). kOn: both. kOff: no PDL launch at all.
  Toggle pdl = Toggle::kAuto;
  // VTLLM_GEMM_SKINNY=auto|1|0: linear's skinny kernel by the measured rule
  // (vt/cuda/gemm.h skinny_rule), wherever it is supported (M <= 32), or never.
  Toggle gemm_skinny = Toggle::kAuto;
  // VTLLM_GDN_FUSED=auto|1|0: gdn_fused_recurrent's one kernel by the measured rule (at
  // most two waves of resident CTAs), wherever the shape allows, or never (the op
  // sequence; the same bytes either way).
  Toggle gdn_fused = Toggle::kAuto;
  // VTLLM_MOE_GEMV=auto|1|0: moe_experts_shared's two GEMV kernels (vt/cuda/moe/
  // shared_gemv.cu) up to the measured bound of 8 tokens, up to 16 (their limit), or never
  // (the composition: moe_experts twice, the gate, the sum).
  Toggle moe_gemv = Toggle::kAuto;
  // VTLLM_MOE_ROUTER=auto|1|0: moe_router's one kernel (vt/cuda/moe/router.cu: the router
  // GEMV, the softmax and the top-k) wherever it applies (1: up to 8 tokens), or never
  // (auto and 0: linear, then moe_route; measured on the H200, the kernel is not faster).
  Toggle moe_router = Toggle::kAuto;
  // VTLLM_SEGATTN_WGMMA=auto|1|0: segment_attention's wgmma kernel (vt/cuda/encoder/
  // segment_attention_wgmma.cu) wherever it applies (bf16 or f16, head_dim 64, 72 or 80,
  // 16-byte rows; auto and 1 alike), or never (the mma.sync kernel).
  Toggle segattn_wgmma = Toggle::kAuto;
  // VTLLM_ATTN_DECODE=mma|cuda_cores.
  AttnDecodeKernel attn_decode = AttnDecodeKernel::kTensorCores;
  // VTLLM_GDN_DECODE=rows|warp.
  GdnDecodeKernel gdn_decode = GdnDecodeKernel::kRows;

  // The config the environment asks for: each variable above, unset = the default. Reads
  // the environment at every call (not thread-safe against setenv). Throws vtllm::Error
  // naming the variable and the accepted values on any other value, and on the removed
  // switches VTLLM_GEMM_PDL (now VTLLM_PDL) and VTLLM_GDN_PREFILL (one prefill kernel pair).
  static KernelConfig from_env();

  // "pdl=auto gemm_skinny=auto ...": every field, for logs and test messages.
  std::string str() const;

  bool operator==(const KernelConfig&) const = default;
};

}  // namespace vt
