#include "base/version.h"

#ifndef VTLLM_VERSION
#error "VTLLM_VERSION must be defined by the build"
#endif

namespace vtllm {

const char* version() { return VTLLM_VERSION; }

const char* build_info() {
  return "built " VTLLM_BUILD_TYPE " with " VTLLM_COMPILER
#if VTLLM_WITH_CUDA
         ", backends: cpu cuda"
#else
         ", backends: cpu"
#endif
      ;
}

}  // namespace vtllm
