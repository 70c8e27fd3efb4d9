// The selfcheck cases (vt/check: each op with a CUDA arm on random inputs against a
// double-precision reference) on a CUDA stream. Skipped without a GPU.
#include <gtest/gtest.h>

#include <string>

#include "cuda_compare.h"
#include "vt/check/harness.h"

namespace vt {
namespace {

TEST(CudaSelfcheck, EveryCaseWithACudaArmPasses) {
  VT_REQUIRE_GPU();
  Stream g(Device::cuda(0));
  int ran = 0;
  for (const check::Result& r : check::run_all(g, 5)) {
    if (r.skipped) continue;
    ++ran;
    EXPECT_TRUE(r.passed) << r.op << " (" << r.config << "): err " << r.err << " tol " << r.tol
                          << " " << r.note;
  }
  EXPECT_GE(ran, 20);
}

}  // namespace
}  // namespace vt
