#include "io/dummy_weights.h"

#include <memory>

#include "base/error.h"
#include "base/hash.h"
#include "io/progress.h"
#include "vt/ops/copy.h"

namespace vtllm::io {

namespace {

float value_from(uint64_t key, uint64_t index) {
  const uint64_t r = splitmix64(key ^ splitmix64(index));
  const float u = float(r >> 40) * (1.0f / 16777216.0f);  // 24 random bits: exact in f32, [0, 1)
  return (2.0f * u - 1.0f) * kDummyWeightRange;
}

template <class T>
void fill(vt::Stream& cpu, const vt::Tensor& t, uint64_t key) {
  T* out = t.data<T>();
  cpu.parallel_for(t.numel(), 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = vt::from_f32<T>(value_from(key, uint64_t(i)));
  });
}

}  // namespace

float dummy_value(uint64_t seed, std::string_view name, uint64_t index) {
  return value_from(splitmix64(seed) ^ fnv1a64(name), index);
}

Weights dummy_weights(vt::Stream& stream, const std::vector<ParamSpec>& specs, const LoadOptions& options) {
  VT_CHECK(stream.device().is_cpu() || stream.device() == options.device, "dummy_weights: a ",
           stream.device().str(), " stream cannot place weights on ", options.device.str());
  std::unique_ptr<vt::Stream> own_cpu;
  if (!stream.device().is_cpu()) own_cpu = std::make_unique<vt::Stream>(vt::Device::cpu());
  vt::Stream& cpu = own_cpu ? *own_cpu : stream;

  uint64_t total = 0, done = 0;
  for (const ParamSpec& s : specs) total += uint64_t(s.numel()) * vt::dtype_size(s.dtype);
  ProgressBar bar("dummy weights", total,
                  options.progress == LoadOptions::Progress::kAlways ||
                      (options.progress == LoadOptions::Progress::kAuto && ProgressBar::stderr_is_terminal()));
  Weights w;
  for (const ParamSpec& s : specs) {
    vt::Tensor t = vt::Tensor::empty(s.shape, s.dtype, vt::Device::cpu());
    const uint64_t key = splitmix64(options.dummy_seed) ^ fnv1a64(s.name);
    switch (s.dtype) {
      case vt::DType::kF32: fill<float>(cpu, t, key); break;
      case vt::DType::kBF16: fill<vt::BF16>(cpu, t, key); break;
      case vt::DType::kF16: fill<vt::F16>(cpu, t, key); break;
      default: VT_THROW("dummy weights: parameter '", s.name, "' has dtype ", vt::dtype_name(s.dtype),
                        "; only f32, bf16 and f16 can be generated");
    }
    if (!options.device.is_cpu()) {
      t = vt::to_device(stream, t, options.device);
      stream.synchronize();  // the CPU buffer is freed next; the copy must have read it
    }
    done += t.nbytes();
    w.summary.loaded += 1;
    w.summary.bytes += t.nbytes();
    w.tensors.emplace(s.name, std::move(t));
    bar.update(done);
  }
  stream.synchronize();
  bar.finish();
  return w;
}

}  // namespace vtllm::io
