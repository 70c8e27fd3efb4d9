#include "vt/check/harness.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "vt/ops/copy.h"

namespace vt::check {

Harness::Harness(Stream& s, uint64_t seed) : s_(s), cpu_(Device::cpu()), rng_(seed) {}

Tensor Harness::upload(const std::vector<double>& vals, const Shape& shape, DType dtype) {
  Tensor f = Tensor::empty(shape, is_floating(dtype) ? DType::kF32 : DType::kI64);
  VT_CHECK(int64_t(vals.size()) == f.numel(), "check: ", vals.size(), " values for shape ",
           shape_str(shape));
  for (int64_t i = 0; i < f.numel(); ++i) {
    if (is_floating(dtype)) {
      f.data<float>()[i] = float(vals[size_t(i)]);
    } else {
      f.data<int64_t>()[i] = int64_t(vals[size_t(i)]);
    }
  }
  Tensor host = to_dtype(cpu_, f, dtype);
  return to_device(s_, host, s_.device());
}

Harness::Input Harness::random(const Shape& shape, DType dtype, double scale) {
  std::normal_distribution<double> d(0.0, scale);
  std::vector<double> v(size_t(shape_numel(shape)));
  for (double& x : v) x = d(rng_);
  Input in;
  in.t = upload(v, shape, dtype);
  in.vals = read(in.t);  // the values after rounding to dtype
  return in;
}

Tensor Harness::poisoned(const Shape& shape, DType dtype) {
  Tensor host = Tensor::empty(shape, dtype);
  std::memset(host.data_ptr(), 0xff, host.nbytes());
  return to_device(s_, host, s_.device());
}

std::vector<double> Harness::read(const Tensor& t) {
  // Host-device copies need contiguous tensors: a strided CUDA view is gathered on the
  // device first.
  Tensor host =
      t.device().is_cpu() ? contiguous(cpu_, t) : to_device(s_, contiguous(s_, t), Device::cpu());
  std::vector<double> out(size_t(host.numel()));
  if (is_floating(host.dtype())) {
    Tensor f = to_dtype(cpu_, host, DType::kF32);
    for (size_t i = 0; i < out.size(); ++i) out[i] = f.data<float>()[i];
  } else {
    Tensor n = to_dtype(cpu_, host, DType::kI64);
    for (size_t i = 0; i < out.size(); ++i) out[i] = double(n.data<int64_t>()[i]);
  }
  return out;
}

double round_as(double v, DType dt) {
  if (dt == DType::kBF16) return double(bf16_to_f32(f32_to_bf16(float(v))));
  if (dt == DType::kF16) return double(f16_to_f32(f32_to_f16(float(v))));
  return v;
}

double tolerance(DType out) {
  switch (out) {
    case DType::kF32: return 3e-5;             // f32 compute over sums of a few hundred terms
    case DType::kBF16: return 1.0 / 256 + 3e-5;  // one bf16 rounding (8-bit significand): u = 2^-8
    case DType::kF16: return 1.0 / 2048 + 3e-5;  // one f16 rounding (11-bit significand): u = 2^-11
    default: return 0.0;
  }
}

void Harness::compare(const std::string& op, const std::string& config, const Tensor& got,
                      const std::vector<double>& ref, double tol, const std::vector<double>& mag) {
  std::vector<double> g = read(got);
  Result r{op, config, 0.0, tol, true, false, ""};
  VT_CHECK(g.size() == ref.size(), "check ", op, ": ", g.size(), " outputs vs ", ref.size(),
           " references");
  // Below the output dtype's smallest normal, rounding error is absolute, not relative.
  const double floor = got.dtype() == DType::kF16 ? std::ldexp(1.0, -14) : std::ldexp(1.0, -126);
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(ref[i])) continue;
    double m = std::max(mag.empty() ? std::fabs(ref[i]) : mag[i], floor);
    double e = std::isnan(g[i]) ? INFINITY : std::fabs(g[i] - ref[i]) / (m + 1e-30);
    if (e > r.err) r.err = e;
  }
  r.passed = r.err <= tol;
  results_.push_back(r);
}

void Harness::run(const std::string& op, const std::string& config, bool cuda_arm,
                  const std::function<void()>& body) {
  if (s_.device().is_cuda() && !cuda_arm) {
    results_.push_back(Result{op, config, 0.0, 0.0, false, true, "no CUDA arm"});
    return;
  }
  size_t before = results_.size();
  try {
    body();
    s_.synchronize();
  } catch (const std::exception& e) {
    results_.resize(before);
    results_.push_back(Result{op, config, INFINITY, 0.0, false, false, e.what()});
    return;
  }
  VT_CHECK(results_.size() > before, "check ", op, " (", config, ") compared nothing");
}

}  // namespace vt::check
