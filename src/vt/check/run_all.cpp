#include "vt/check/cases.h"

namespace vt::check {

std::vector<Result> run_all(Stream& s, uint64_t seed) {
  Harness h(s, seed);
  check_norms(h);
  check_activations(h);
  check_gemm(h);
  check_embedding(h);
  check_rope(h);
  check_argmax(h);
  check_gdn(h);
  return h.results();
}

}  // namespace vt::check
