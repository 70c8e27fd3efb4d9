// vt::sample's contract on the CPU arm: validation names the bad field, the tie rules
// (top_k keeps every tie at the k-th value, top_p keeps tied tokens lower id first,
// greedy takes the lowest id), a fully masked row throws. Equality with the engine's
// Sampler on random inputs is tests/engine/device_sampler_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "base/error.h"
#include "vt/ops/sampling.h"

namespace vt {
namespace {

Tensor row_of(std::initializer_list<float> v) {
  Tensor t = Tensor::empty({1, int64_t(v.size())}, DType::kF32);
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

SampleBatch one_row(const SampleRowParams& p) {
  SampleBatch b;
  b.rows = {p};
  b.edit_start = {0, 0};
  return b;
}

std::string error_of(Stream& s, const Tensor& t, const SampleBatch& b) {
  try {
    sample(s, t, b);
  } catch (const vtllm::Error& e) {
    return e.what();
  }
  return "";
}

TEST(Sample, ValidationNamesTheProblem) {
  Stream s(Device::cpu());
  const Tensor t = row_of({1, 2, 3});
  SampleRowParams p;
  p.uniform = 1.0;
  EXPECT_NE(error_of(s, t, one_row(p)).find("uniform"), std::string::npos);
  p.uniform = 0.5;
  p.logprobs = kMaxDeviceLogprobs + 1;
  EXPECT_NE(error_of(s, t, one_row(p)).find("logprobs"), std::string::npos);
  p.logprobs = -1;
  SampleBatch b = one_row(p);
  b.edits = {{.token = 1}, {.token = 1}};
  b.edit_start = {0, 2};
  EXPECT_NE(error_of(s, t, b).find("twice"), std::string::npos);
  b.edits = {{.token = 3}};
  b.edit_start = {0, 1};
  EXPECT_NE(error_of(s, t, b).find("outside the vocabulary"), std::string::npos);
  EXPECT_NE(error_of(s, t, SampleBatch{}).find("row params"), std::string::npos);
}

TEST(Sample, TieRules) {
  Stream s(Device::cpu());
  // Greedy: the lowest id of the maxima.
  SampleRowParams g;
  g.temperature = 0;
  EXPECT_EQ(sample(s, row_of({1, 5, 2, 5}), one_row(g)).token[0], 1);
  // top_k = 1 keeps both tied maxima: u in the upper half draws the second.
  SampleRowParams k;
  k.top_k = 1;
  k.uniform = 0.75;
  EXPECT_EQ(sample(s, row_of({0, 4, 1, 4}), one_row(k)).token[0], 3);
  // top_p = 0.5 over two equal maxima (mass before the second = 0.5, not < 0.5): only
  // the lower id stays, whatever u.
  SampleRowParams p;
  p.top_p = 0.5f;
  p.uniform = 0.99;
  EXPECT_EQ(sample(s, row_of({6, 6}), one_row(p)).token[0], 0);
  p.top_p = 0.51f;  // now the second tie stays too
  EXPECT_EQ(sample(s, row_of({6, 6}), one_row(p)).token[0], 1);
}

TEST(Sample, EditsApplyInOrderAndAMaskedRowThrows) {
  Stream s(Device::cpu());
  SampleRowParams g;
  g.temperature = 0;
  SampleBatch b = one_row(g);
  b.bias = {10.0f, -4.0f};
  b.edits = {{.token = 0, .bias_begin = 0, .bias_end = 2}};  // 1 + 10 - 4 = 7 > 5
  b.edit_start = {0, 1};
  EXPECT_EQ(sample(s, row_of({1, 5}), b).token[0], 0);
  SampleRowParams t;
  SampleBatch m = one_row(t);
  m.edits = {{.token = 0, .masked = true}, {.token = 1, .masked = true}};
  m.edit_start = {0, 2};
  EXPECT_NE(error_of(s, row_of({1, 5}), m).find("masked"), std::string::npos);
}

}  // namespace
}  // namespace vt
