#include "vt/kernel_config.h"

#include <cstdlib>
#include <string_view>
#include <utility>

#include "base/error.h"

namespace vt {

namespace {

// The value of environment variable `name` among `spellings` (the first spelling of each
// is the canonical one, shown in the error); `fallback` when unset.
template <class E, size_t N>
E parse(const char* name, E fallback, const std::pair<const char*, E> (&spellings)[N]) {
  const char* v = std::getenv(name);
  if (!v) return fallback;
  std::string accepted;
  for (const auto& [text, value] : spellings) {
    if (std::string_view(v) == text) return value;
    accepted += accepted.empty() ? text : std::string(", ") + text;
  }
  VT_THROW(name, "=", v, ": expected one of ", accepted);
}

constexpr std::pair<const char*, Toggle> kToggles[] = {
    {"auto", Toggle::kAuto}, {"1", Toggle::kOn}, {"0", Toggle::kOff}};

constexpr std::pair<const char*, AttnDecodeKernel> kAttnDecode[] = {
    {"mma", AttnDecodeKernel::kTensorCores}, {"cuda_cores", AttnDecodeKernel::kCudaCores}};
constexpr std::pair<const char*, GdnDecodeKernel> kGdnDecode[] = {{"rows", GdnDecodeKernel::kRows},
                                                                  {"warp", GdnDecodeKernel::kWarp}};

const char* toggle_name(Toggle t) {
  return t == Toggle::kAuto ? "auto" : t == Toggle::kOn ? "1" : "0";
}

void refuse_removed(const char* name, const char* instead) {
  if (const char* v = std::getenv(name)) VT_THROW(name, "=", v, ": this switch is gone; ", instead);
}

}  // namespace

KernelConfig KernelConfig::from_env() {
  refuse_removed("VTLLM_GEMM_PDL", "VTLLM_PDL=auto|1|0 sets the skinny GEMM's PDL too");
  refuse_removed("VTLLM_GDN_PREFILL", "the chunked prefill has one kernel pair (tensor cores)");
  KernelConfig c;
  c.pdl = parse("VTLLM_PDL", c.pdl, kToggles);
  c.gemm_skinny = parse("VTLLM_GEMM_SKINNY", c.gemm_skinny, kToggles);
  c.gdn_fused = parse("VTLLM_GDN_FUSED", c.gdn_fused, kToggles);
  c.moe_gemv = parse("VTLLM_MOE_GEMV", c.moe_gemv, kToggles);
  c.moe_router = parse("VTLLM_MOE_ROUTER", c.moe_router, kToggles);
  c.segattn_wgmma = parse("VTLLM_SEGATTN_WGMMA", c.segattn_wgmma, kToggles);
  c.attn_decode = parse("VTLLM_ATTN_DECODE", c.attn_decode, kAttnDecode);
  c.gdn_decode = parse("VTLLM_GDN_DECODE", c.gdn_decode, kGdnDecode);
  return c;
}

std::string KernelConfig::str() const {
  return vtllm::str_cat(
      "pdl=", toggle_name(pdl), " gemm_skinny=", toggle_name(gemm_skinny),
      " gdn_fused=", toggle_name(gdn_fused), " moe_gemv=", toggle_name(moe_gemv),
      " moe_router=", toggle_name(moe_router), " segattn_wgmma=", toggle_name(segattn_wgmma),
      " attn_decode=", attn_decode == AttnDecodeKernel::kTensorCores ? "mma" : "cuda_cores",
      " gdn_decode=", gdn_decode == GdnDecodeKernel::kRows ? "rows" : "warp");
}

}  // namespace vt
