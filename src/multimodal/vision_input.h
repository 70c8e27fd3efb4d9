// One image or video after its processor (qwen3_5.md §13-§14): the patch rows the vision
// tower reads, its grid, and what the prompt expansion and the caches need.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace vtllm::multimodal {

enum class MediaKind { kImage, kVideo };

// Memory for large pixel buffers (>= kLargePixelBytes): `bytes` rounded up to 2 MiB,
// backed by transparent huge pages where the kernel allows, and recycled: a freed buffer
// is kept (up to 512 MiB in all) for the next of its size, which then needs no page
// faults. Thread-safe; allocate throws std::bad_alloc.
inline constexpr size_t kLargePixelBytes = size_t{4} << 20;
void* allocate_large_pixels(size_t bytes);
void free_large_pixels(void* p, size_t bytes) noexcept;

// std::allocator, except that value-initialisation leaves an element as it is (resize()
// writes nothing, for buffers their producer fills whole) and large buffers come from
// allocate_large_pixels.
template <class T>
struct UninitAllocator : std::allocator<T> {
  using value_type = T;
  template <class U>
  struct rebind {
    using other = UninitAllocator<U>;
  };
  UninitAllocator() = default;
  template <class U>
  UninitAllocator(const UninitAllocator<U>&) noexcept {}
  T* allocate(size_t n) {
    if (n * sizeof(T) < kLargePixelBytes) return std::allocator<T>::allocate(n);
    return static_cast<T*>(allocate_large_pixels(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) noexcept {
    if (n * sizeof(T) < kLargePixelBytes) return std::allocator<T>::deallocate(p, n);
    free_large_pixels(p, n * sizeof(T));
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    if constexpr (sizeof...(Args) == 0)
      ::new (static_cast<void*>(p)) U;
    else
      ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

using PixelBuffer = std::vector<float, UninitAllocator<float>>;

struct VisionInput {
  MediaKind kind = MediaKind::kImage;
  // Patch grid (temporal, height, width) in patches; grid_h and grid_w are multiples of
  // the merge size. Images have grid_t = 1.
  int64_t grid_t = 1, grid_h = 0, grid_w = 0;
  // in_channels * temporal_patch_size * patch_size^2 (1536 for Qwen3.5).
  int64_t patch_dim = 0;
  // [grid_t * grid_h * grid_w, patch_dim] row-major f32, in the processor's patch order.
  PixelBuffer pixel_values;
  // Video only: seconds of each temporal index (§14.4), grid_t entries.
  std::vector<double> timestamps;
  // 128-bit content hash of kind, grid and pixel_values: the encoder cache's key and the
  // prefix cache's extra key (equal inputs, equal hash).
  std::array<uint64_t, 2> hash{};

  int64_t num_patches() const { return grid_t * grid_h * grid_w; }
  // LLM placeholder tokens this item expands to (all temporal indices).
  int64_t num_tokens(int64_t merge_size) const {
    return num_patches() / (merge_size * merge_size);
  }
};

}  // namespace vtllm::multimodal
