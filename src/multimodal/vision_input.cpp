#include "multimodal/vision_input.h"

#include <sys/mman.h>

#include <cstdlib>
#include <list>
#include <mutex>
#include <new>

namespace vtllm::multimodal {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
// Freed buffers kept for reuse, at most this many bytes (oldest freed first out).
constexpr size_t kCacheBytes = size_t{512} << 20;

size_t rounded(size_t bytes) { return (bytes + kHugePage - 1) / kHugePage * kHugePage; }

// Buffers of freed pixel arrays by rounded size: a processor that writes an image of a
// size it wrote before takes memory that is mapped already (no page faults, no zeroing
// by the kernel). Thread-safe.
class BufferCache {
 public:
  void* take(size_t size) {
    std::lock_guard lock(mu_);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->size != size) continue;
      void* p = it->p;
      held_ -= size;
      free_.erase(it);
      return p;
    }
    return nullptr;
  }
  void give(void* p, size_t size) {
    std::list<Entry> out;
    {
      std::lock_guard lock(mu_);
      if (size > kCacheBytes) {
        out.push_back({p, size});
      } else {
        free_.push_front({p, size});
        held_ += size;
        while (held_ > kCacheBytes) {
          held_ -= free_.back().size;
          out.splice(out.begin(), free_, std::prev(free_.end()));
        }
      }
    }
    for (const Entry& e : out) std::free(e.p);
  }

 private:
  struct Entry {
    void* p;
    size_t size;
  };
  std::mutex mu_;
  std::list<Entry> free_;  // most recently freed first
  size_t held_ = 0;
};

BufferCache& cache() {
  static BufferCache* c = new BufferCache;  // never destroyed: frees may come at exit
  return *c;
}

}  // namespace

void* allocate_large_pixels(size_t bytes) {
  const size_t size = rounded(bytes);
  if (void* p = cache().take(size)) return p;
  void* p = std::aligned_alloc(kHugePage, size);
  if (!p) throw std::bad_alloc();
  // Advice only: where transparent huge pages are off or unavailable, 4 KiB pages serve.
  (void)madvise(p, size, MADV_HUGEPAGE);
  return p;
}

void free_large_pixels(void* p, size_t bytes) noexcept {
  try {
    cache().give(p, rounded(bytes));
  } catch (...) {  // std::list's node allocation failed: give the memory back instead
    std::free(p);
  }
}

}  // namespace vtllm::multimodal
