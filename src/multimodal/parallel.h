// The parallel loop the processors split their work with (resize rows, patch rows,
// video frames), so that one large image or video uses several cores.
//
// Thread-safety: parallel_for is reentrant; a ParallelFor's own rules are its maker's
// (MediaPool::parallel_for: callable from any thread, its pool's workers included).
#pragma once

#include <cstdint>
#include <functional>

namespace vtllm::multimodal {

// loop(n, body) calls body(i) once for each i in [0, n) and returns when every call has
// returned. Calls may run on several threads at once and in any order, so they must
// write disjoint data; the first exception one throws is rethrown after the calls
// already started have returned (indices not started by then are skipped).
using ParallelFor = std::function<void(int64_t n, const std::function<void(int64_t)>& body)>;

// loop(n, body); an empty `loop` calls body(0), ..., body(n - 1) on this thread.
void parallel_for(const ParallelFor& loop, int64_t n, const std::function<void(int64_t)>& body);

}  // namespace vtllm::multimodal
