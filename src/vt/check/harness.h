// The op-check harness: runs vt ops on random inputs against double-precision
// references computed on the host, on any stream (CPU, or CUDA for the ops that
// have a CUDA arm). Used by `vtllm selfcheck` and the vt tests.
//
// Inputs are random normals rounded to their dtype (never all zero); the reference
// reads the rounded values, so only the op's own error is measured. Outputs are
// poisoned with NaN before each run, so an element the op failed to write fails.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt::check {

struct Result {
  std::string op;
  std::string config;    // shapes and dtypes, e.g. "x bf16[7, 129] w f32 -> bf16"
  double err = 0.0;      // max |got - ref| / (magnitude + tiny) over the elements
  double tol = 0.0;
  bool passed = false;
  bool skipped = false;  // the stream's backend has no arm for this op
  std::string note;      // the exception text when the op threw
};

class Harness {
 public:
  Harness(Stream& s, uint64_t seed);

  Stream& stream() { return s_; }
  Stream& cpu() { return cpu_; }
  std::mt19937_64& rng() { return rng_; }

  // A random tensor on the stream's device; `vals` holds the rounded values.
  struct Input {
    Tensor t;
    std::vector<double> vals;
  };
  Input random(const Shape& shape, DType dtype, double scale = 1.0);
  // Host values into a tensor on the stream's device (integers for int dtypes).
  Tensor upload(const std::vector<double>& vals, const Shape& shape, DType dtype);
  // An output tensor on the stream's device, every byte 0xff (NaN in every float dtype).
  Tensor poisoned(const Shape& shape, DType dtype);
  // A tensor's elements in logical (row-major) order, as doubles.
  std::vector<double> read(const Tensor& t);

  // Compares got to ref elementwise: err_i = |got_i - ref_i| / (mag_i + 1e-30) where
  // mag (default |ref|) is the scale the op's error is relative to (for a dot product,
  // the sum of |terms|). A NaN in got where ref is finite fails.
  void compare(const std::string& op, const std::string& config, const Tensor& got,
               const std::vector<double>& ref, double tol, const std::vector<double>& mag = {});
  // Runs `body` as one check; an exception becomes a failed result with its message,
  // and `cuda_arm == false` on a CUDA stream records a skip.
  void run(const std::string& op, const std::string& config, bool cuda_arm,
           const std::function<void()>& body);

  const std::vector<Result>& results() const { return results_; }

 private:
  Stream& s_;
  Stream cpu_;
  std::mt19937_64 rng_;
  std::vector<Result> results_;
  std::string current_op_, current_config_;
};

// Relative tolerance for an output of dtype `out` (its rounding plus f32 compute).
double tolerance(DType out);

// v rounded to dt (through f32) and widened back; v for f32. A reference models an op's
// intermediate rounding points with it (a narrow output's chain of PyTorch ops, e.g.
// silu rounded before the product), leaving the final rounding to tolerance().
double round_as(double v, DType dt);

// Every op family's checks; the whole set is what `vtllm selfcheck` prints.
std::vector<Result> run_all(Stream& s, uint64_t seed);

}  // namespace vt::check
