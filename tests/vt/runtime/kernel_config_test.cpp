#include "vt/kernel_config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "base/error.h"
#include "vt/stream.h"

namespace vt {
namespace {

// Every variable KernelConfig::from_env reads or refuses.
const char* const kVariables[] = {"VTLLM_PDL",        "VTLLM_GEMM_SKINNY", "VTLLM_GDN_FUSED",
                                  "VTLLM_MOE_GEMV",   "VTLLM_MOE_ROUTER",  "VTLLM_ATTN_DECODE",
                                  "VTLLM_GDN_DECODE", "VTLLM_GEMM_PDL",    "VTLLM_GDN_PREFILL"};

// Clears the kernel variables for the test and restores what the process had after it
// (the test binary may run under a switch).
class KernelConfigEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kVariables) {
      const char* v = std::getenv(name);
      saved_.push_back({name, v != nullptr, v ? v : ""});
      unsetenv(name);
    }
  }
  void TearDown() override {
    for (const Saved& s : saved_) {
      if (s.set)
        setenv(s.name, s.value.c_str(), 1);
      else
        unsetenv(s.name);
    }
  }

 private:
  struct Saved {
    const char* name;
    bool set;
    std::string value;
  };
  std::vector<Saved> saved_;
};

// The message of the vtllm::Error that from_env throws, or "" when it does not throw.
std::string from_env_error() {
  try {
    KernelConfig::from_env();
  } catch (const vtllm::Error& e) {
    return e.what();
  }
  return "";
}

TEST_F(KernelConfigEnv, UnsetIsTheShippedDefault) {
  const KernelConfig c = KernelConfig::from_env();
  EXPECT_EQ(c, KernelConfig{});
  EXPECT_EQ(c.pdl, Toggle::kAuto);
  EXPECT_EQ(c.gemm_skinny, Toggle::kAuto);
  EXPECT_EQ(c.gdn_fused, Toggle::kAuto);
  EXPECT_EQ(c.moe_gemv, Toggle::kAuto);
  EXPECT_EQ(c.moe_router, Toggle::kAuto);
  EXPECT_EQ(c.segattn_wgmma, Toggle::kAuto);
  EXPECT_EQ(c.attn_decode, AttnDecodeKernel::kTensorCores);
  EXPECT_EQ(c.gdn_decode, GdnDecodeKernel::kRows);
  EXPECT_EQ(c.str(),
            "pdl=auto gemm_skinny=auto gdn_fused=auto moe_gemv=auto moe_router=auto "
            "segattn_wgmma=auto attn_decode=mma gdn_decode=rows");
}

TEST_F(KernelConfigEnv, ParsesEveryAcceptedValue) {
  struct Case {
    const char* name;
    const char* value;
    void (*expect)(const KernelConfig&);
  };
  const Case cases[] = {
      {"VTLLM_PDL", "auto", [](const KernelConfig& c) { EXPECT_EQ(c.pdl, Toggle::kAuto); }},
      {"VTLLM_PDL", "1", [](const KernelConfig& c) { EXPECT_EQ(c.pdl, Toggle::kOn); }},
      {"VTLLM_PDL", "0", [](const KernelConfig& c) { EXPECT_EQ(c.pdl, Toggle::kOff); }},
      {"VTLLM_GEMM_SKINNY", "1",
       [](const KernelConfig& c) { EXPECT_EQ(c.gemm_skinny, Toggle::kOn); }},
      {"VTLLM_GEMM_SKINNY", "0",
       [](const KernelConfig& c) { EXPECT_EQ(c.gemm_skinny, Toggle::kOff); }},
      {"VTLLM_GDN_FUSED", "1", [](const KernelConfig& c) { EXPECT_EQ(c.gdn_fused, Toggle::kOn); }},
      {"VTLLM_GDN_FUSED", "0", [](const KernelConfig& c) { EXPECT_EQ(c.gdn_fused, Toggle::kOff); }},
      {"VTLLM_MOE_GEMV", "1", [](const KernelConfig& c) { EXPECT_EQ(c.moe_gemv, Toggle::kOn); }},
      {"VTLLM_MOE_GEMV", "0", [](const KernelConfig& c) { EXPECT_EQ(c.moe_gemv, Toggle::kOff); }},
      {"VTLLM_MOE_ROUTER", "1",
       [](const KernelConfig& c) { EXPECT_EQ(c.moe_router, Toggle::kOn); }},
      {"VTLLM_MOE_ROUTER", "0",
       [](const KernelConfig& c) { EXPECT_EQ(c.moe_router, Toggle::kOff); }},
      {"VTLLM_SEGATTN_WGMMA", "1",
       [](const KernelConfig& c) { EXPECT_EQ(c.segattn_wgmma, Toggle::kOn); }},
      {"VTLLM_SEGATTN_WGMMA", "0",
       [](const KernelConfig& c) { EXPECT_EQ(c.segattn_wgmma, Toggle::kOff); }},
      {"VTLLM_ATTN_DECODE", "mma",
       [](const KernelConfig& c) { EXPECT_EQ(c.attn_decode, AttnDecodeKernel::kTensorCores); }},
      {"VTLLM_ATTN_DECODE", "cuda_cores",
       [](const KernelConfig& c) { EXPECT_EQ(c.attn_decode, AttnDecodeKernel::kCudaCores); }},
      {"VTLLM_GDN_DECODE", "rows",
       [](const KernelConfig& c) { EXPECT_EQ(c.gdn_decode, GdnDecodeKernel::kRows); }},
      {"VTLLM_GDN_DECODE", "warp",
       [](const KernelConfig& c) { EXPECT_EQ(c.gdn_decode, GdnDecodeKernel::kWarp); }},
  };
  for (const Case& k : cases) {
    setenv(k.name, k.value, 1);
    const KernelConfig c = KernelConfig::from_env();
    SCOPED_TRACE(std::string(k.name) + "=" + k.value + " -> " + c.str());
    k.expect(c);
    // Only that field moved.
    KernelConfig rest = c;
    const KernelConfig d;
    if (std::string(k.name) == "VTLLM_PDL") rest.pdl = d.pdl;
    if (std::string(k.name) == "VTLLM_GEMM_SKINNY") rest.gemm_skinny = d.gemm_skinny;
    if (std::string(k.name) == "VTLLM_GDN_FUSED") rest.gdn_fused = d.gdn_fused;
    if (std::string(k.name) == "VTLLM_MOE_GEMV") rest.moe_gemv = d.moe_gemv;
    if (std::string(k.name) == "VTLLM_MOE_ROUTER") rest.moe_router = d.moe_router;
    if (std::string(k.name) == "VTLLM_SEGATTN_WGMMA") rest.segattn_wgmma = d.segattn_wgmma;
    if (std::string(k.name) == "VTLLM_ATTN_DECODE") rest.attn_decode = d.attn_decode;
    if (std::string(k.name) == "VTLLM_GDN_DECODE") rest.gdn_decode = d.gdn_decode;
    EXPECT_EQ(rest, d);
    unsetenv(k.name);
  }
}

TEST_F(KernelConfigEnv, RejectsOtherValuesNamingTheVariableAndTheAcceptedOnes) {
  struct Case {
    const char* name;
    const char* value;
    const char* accepted;
  };
  for (const Case& k :
       {Case{"VTLLM_PDL", "yes", "auto, 1, 0"}, Case{"VTLLM_PDL", "", "auto, 1, 0"},
        Case{"VTLLM_GEMM_SKINNY", "2", "auto, 1, 0"}, Case{"VTLLM_GDN_FUSED", "on", "auto, 1, 0"},
        Case{"VTLLM_MOE_GEMV", "yes", "auto, 1, 0"}, Case{"VTLLM_MOE_ROUTER", "2", "auto, 1, 0"},
        Case{"VTLLM_SEGATTN_WGMMA", "on", "auto, 1, 0"},
        Case{"VTLLM_ATTN_DECODE", "tc", "mma, cuda_cores"},
        Case{"VTLLM_GDN_DECODE", "Rows", "rows, warp"}}) {
    setenv(k.name, k.value, 1);
    const std::string msg = from_env_error();
    EXPECT_NE(msg.find(std::string(k.name) + "=" + k.value + ":"), std::string::npos) << msg;
    EXPECT_NE(msg.find(k.accepted), std::string::npos) << msg;
    unsetenv(k.name);
  }
}

TEST_F(KernelConfigEnv, RefusesTheRemovedSwitches) {
  setenv("VTLLM_GEMM_PDL", "0", 1);
  std::string msg = from_env_error();
  EXPECT_NE(msg.find("VTLLM_GEMM_PDL=0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("VTLLM_PDL"), std::string::npos) << msg;
  unsetenv("VTLLM_GEMM_PDL");
  setenv("VTLLM_GDN_PREFILL", "f32", 1);
  msg = from_env_error();
  EXPECT_NE(msg.find("VTLLM_GDN_PREFILL=f32"), std::string::npos) << msg;
}

TEST_F(KernelConfigEnv, StreamTakesTheEnvironmentOrTheGivenConfig) {
  setenv("VTLLM_GDN_FUSED", "0", 1);
  setenv("VTLLM_ATTN_DECODE", "cuda_cores", 1);
  Stream from_env(Device::cpu(), 1);
  EXPECT_EQ(from_env.kernel_config().gdn_fused, Toggle::kOff);
  EXPECT_EQ(from_env.kernel_config().attn_decode, AttnDecodeKernel::kCudaCores);
  EXPECT_EQ(from_env.kernel_config().pdl, Toggle::kAuto);

  KernelConfig given;
  given.pdl = Toggle::kOn;
  given.gdn_decode = GdnDecodeKernel::kWarp;
  Stream explicit_config(Device::cpu(), 1, given);
  EXPECT_EQ(explicit_config.kernel_config(), given);

  // The setter replaces the whole config; the environment is not read again.
  setenv("VTLLM_PDL", "0", 1);
  from_env.set_kernel_config(given);
  EXPECT_EQ(from_env.kernel_config(), given);

  setenv("VTLLM_PDL", "sometimes", 1);
  EXPECT_THROW(Stream(Device::cpu(), 1), vtllm::Error);
  EXPECT_NO_THROW(Stream(Device::cpu(), 1, KernelConfig{}));
}

}  // namespace
}  // namespace vt
