#include "multimodal/parallel.h"

namespace vtllm::multimodal {

void parallel_for(const ParallelFor& loop, int64_t n, const std::function<void(int64_t)>& body) {
  if (loop) return loop(n, body);
  for (int64_t i = 0; i < n; ++i) body(i);
}

}  // namespace vtllm::multimodal
