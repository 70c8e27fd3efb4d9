// vt::Rows (vt/ops/args.h): the one- and two-level row forms rows_view accepts, the
// forms it refuses, and every CPU op that takes [rows, cols] views run on two-level
// views against the same op on contiguous copies (bit-identical: a row's arithmetic
// does not depend on where the row lives).
#include "vt/ops/args.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <string>

#include "vt/ops/activation.h"
#include "vt/ops/copy.h"
#include "vt/ops/gdn.h"
#include "vt/ops/norm.h"

namespace vt {
namespace {

Tensor randn(const Shape& shape, DType dtype, uint64_t seed) {
  Tensor f = Tensor::empty(shape, DType::kF32);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, 2.0f);
  for (int64_t i = 0; i < f.numel(); ++i) f.data<float>()[i] = d(rng);
  Stream s(Device::cpu(), 1);
  return to_dtype(s, f, dtype);
}

// Bytes of two tensors of one shape and dtype, compared in logical order.
void expect_same_bits(Stream& s, const Tensor& want, const Tensor& got, const std::string& what) {
  ASSERT_EQ(want.shape(), got.shape()) << what;
  ASSERT_EQ(want.dtype(), got.dtype()) << what;
  Tensor w = contiguous(s, want), g = contiguous(s, got);
  EXPECT_EQ(std::memcmp(w.data_ptr(), g.data_ptr(), w.nbytes()), 0) << what;
}

// [T, H, D] heads of the column slice [off, off + H * D) of a [T, W] tensor.
Tensor heads(const Tensor& wide, int64_t off, int64_t h, int64_t d) {
  return wide.slice(1, off, off + h * d).reshape({wide.size(0), h, d});
}

TEST(RowsView, OneLevelForms) {
  Tensor t = Tensor::empty({2, 3, 4}, DType::kBF16);
  Rows r = rows_view(t, "op", "x");
  EXPECT_TRUE(r.one_level());
  EXPECT_EQ(r.rows, 6);
  EXPECT_EQ(r.cols, 4);
  EXPECT_EQ(r.row_stride, 4);
  EXPECT_EQ(r.row(5), static_cast<char*>(t.data_ptr()) + 5 * 4 * 2);
  // A column slice of a matrix; a [T, H, D] view of a contiguous [T, H*D] matrix.
  Tensor m = Tensor::empty({5, 10}, DType::kF32);
  r = rows_view(m.slice(1, 3, 7), "op", "x");
  EXPECT_TRUE(r.one_level());
  EXPECT_EQ(r.row_stride, 10);
  EXPECT_EQ(r.offset(4), 40);
  r = rows_view(m.reshape({5, 2, 5}), "op", "x");
  EXPECT_TRUE(r.one_level());
  EXPECT_EQ(r.rows, 10);
  EXPECT_EQ(r.row_stride, 5);
  // Size-1 dims between strided ones do not count as levels.
  Tensor one = Tensor::empty({1, 6, 1, 4}, DType::kF32).slice(1, 0, 3);
  r = rows_view(one, "op", "x");
  EXPECT_TRUE(r.one_level());
  EXPECT_EQ(r.rows, 3);
  EXPECT_EQ(r.row_stride, 4);
  // A 1-d tensor is one row; a [T, 1, D] view of a column slice is one level.
  EXPECT_EQ(rows_view(Tensor::empty({7}, DType::kF32), "op", "x").rows, 1);
  r = rows_view(heads(m, 2, 1, 4), "op", "x");
  EXPECT_TRUE(r.one_level());
  EXPECT_EQ(r.row_stride, 10);
}

TEST(RowsView, TwoLevelPerHeadViewOfAColumnSlice) {
  const int64_t T = 4, W = 50, H = 3, D = 8, off = 5;
  Tensor wide = Tensor::empty({T, W}, DType::kF32);
  Tensor x = heads(wide, off, H, D);  // strides (W, D, 1)
  const Rows r = rows_view(x, "op", "x");
  EXPECT_FALSE(r.one_level());
  EXPECT_EQ(r.rows, T * H);
  EXPECT_EQ(r.cols, D);
  EXPECT_EQ(r.inner_rows, H);
  EXPECT_EQ(r.row_stride, D);
  EXPECT_EQ(r.outer_stride, W);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) {
      EXPECT_EQ(r.offset(t * H + h), t * W + h * D);
      EXPECT_EQ(r.row(t * H + h), static_cast<void*>(&wide.data<float>()[t * W + off + h * D]));
    }
  // Leading dims that collapse merge first: [2, 2, H, D] over the same slice is
  // [T = 4 rows of H heads], still two levels.
  Tensor x4 = x.reshape({2, 2, H, D});
  const Rows r4 = rows_view(x4, "op", "x");
  EXPECT_EQ(r4.inner_rows, H);
  EXPECT_EQ(r4.outer_stride, W);
  for (int64_t i = 0; i < T * H; ++i) EXPECT_EQ(r4.offset(i), r.offset(i));
  EXPECT_THROW(expect_one_level(r, "linear", "x"), vtllm::Error);
  EXPECT_NO_THROW(expect_one_level(rows_view(wide, "linear", "x"), "linear", "x"));
}

TEST(RowsView, ThreeLevelsAreRefusedNamingTheOp) {
  Tensor t = Tensor::empty({4, 6, 8, 16}, DType::kF32);
  Tensor x = t.slice(1, 0, 3).slice(2, 0, 4);  // strides 768, 128, 16: no two merge
  try {
    (void)rows_view(x, "rms_norm", "x");
    ADD_FAILURE() << "three row strides accepted";
  } catch (const vtllm::Error& e) {
    EXPECT_NE(std::string(e.what()).find("rms_norm: x"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("one or two row strides"), std::string::npos) << e.what();
  }
  Tensor w = Tensor::empty({16}, DType::kF32), out = Tensor::empty({4, 3, 4, 16}, DType::kF32);
  Stream s(Device::cpu());
  EXPECT_THROW(rms_norm(s, x, w, 1e-6f, RmsNormKind::kPlain, out), vtllm::Error);
}

// Runs op(x, out) on two-level views and on contiguous copies: the outputs must be the
// same bits, and columns outside out's view untouched.
void expect_two_level_matches(const std::string& what, DType in_dt, DType out_dt, int64_t in_d,
                              int64_t out_d,
                              const std::function<void(Stream&, const Tensor&, Tensor&)>& op) {
  Stream s(Device::cpu());
  const int64_t T = 7, H = 5, off_in = 3, off_out = 11;
  Tensor x_wide = randn({T, H * in_d + 9}, in_dt, 1);
  Tensor x = heads(x_wide, off_in, H, in_d);
  Tensor out_wide = randn({T, H * out_d + 17}, out_dt, 2);
  Tensor saved = Tensor::empty(out_wide.shape(), out_dt);
  std::memcpy(saved.data_ptr(), out_wide.data_ptr(), out_wide.nbytes());
  Tensor out = heads(out_wide, off_out, H, out_d);
  ASSERT_FALSE(rows_view(x, "t", "x").one_level());
  ASSERT_FALSE(rows_view(out, "t", "out").one_level());
  op(s, x, out);
  Tensor xc = contiguous(s, x), want = Tensor::empty(out.shape(), out_dt);
  ASSERT_TRUE(rows_view(xc, "t", "x").one_level());
  op(s, xc, want);
  expect_same_bits(s, want, out, what);
  // Columns outside the view keep their bytes.
  const int64_t esz = int64_t(dtype_size(out_dt)), W = out_wide.size(1);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < W; ++c) {
      if (c >= off_out && c < off_out + H * out_d) continue;
      const int64_t at = (t * W + c) * esz;
      ASSERT_EQ(std::memcmp(static_cast<char*>(out_wide.data_ptr()) + at,
                            static_cast<char*>(saved.data_ptr()) + at, size_t(esz)),
                0)
          << what << ": column " << c << " outside the view changed";
    }
}

TEST(TwoLevelRows, EveryRowOpMatchesItsContiguousCopy) {
  const int64_t D = 24;
  Tensor w = randn({D}, DType::kBF16, 3);
  for (DType dt : {DType::kF32, DType::kBF16}) {
    const std::string n = dtype_name(dt);
    for (RmsNormKind kind : {RmsNormKind::kPlain, RmsNormKind::kOnePlus})
      expect_two_level_matches(
          "rms_norm " + n, dt, dt, D, D,
          [&](Stream& s, const Tensor& x, Tensor& o) { rms_norm(s, x, w, 1e-6f, kind, o); });
    expect_two_level_matches(
        "l2_normalize " + n, dt, DType::kF32, D, D,
        [&](Stream& s, const Tensor& x, Tensor& o) { l2_normalize(s, x, 1e-6f, o); });
    expect_two_level_matches("silu_and_mul " + n, dt, dt, 2 * D, D,
                             [&](Stream& s, const Tensor& x, Tensor& o) { silu_and_mul(s, x, o); });
    expect_two_level_matches("sigmoid " + n, dt, dt, D, D,
                             [&](Stream& s, const Tensor& x, Tensor& o) { sigmoid(s, x, o); });
    expect_two_level_matches("softmax " + n, dt, DType::kF32, D, D,
                             [&](Stream& s, const Tensor& x, Tensor& o) { softmax(s, x, o); });
    // Binary ops and the gated norm: the second operand contiguous, then two-level too.
    Tensor other = randn({7, 5, D}, dt, 4);
    Tensor other_wide = randn({7, 5 * D + 6}, dt, 5);
    for (bool strided_other : {false, true}) {
      const Tensor b = strided_other ? heads(other_wide, 6, 5, D) : other;
      const std::string tag = n + (strided_other ? " (both two-level)" : "");
      expect_two_level_matches("add " + tag, dt, dt, D, D,
                               [&](Stream& s, const Tensor& x, Tensor& o) { add(s, x, b, o); });
      expect_two_level_matches("mul " + tag, dt, dt, D, D,
                               [&](Stream& s, const Tensor& x, Tensor& o) { mul(s, x, b, o); });
      expect_two_level_matches(
          "gated_rms_norm " + tag, dt, dt, D, D,
          [&](Stream& s, const Tensor& x, Tensor& o) { gated_rms_norm(s, x, b, w, 1e-6f, o); });
      expect_two_level_matches(
          "gated_rms_norm (z two-level) " + tag, dt, dt, D, D,
          [&](Stream& s, const Tensor& x, Tensor& o) { gated_rms_norm(s, b, x, w, 1e-6f, o); });
    }
  }
}

TEST(TwoLevelRows, InPlaceOnATwoLevelView) {
  Stream s(Device::cpu());
  Tensor wide = randn({6, 4 * 16 + 5}, DType::kBF16, 7);
  Tensor copy_of = Tensor::empty(wide.shape(), DType::kBF16);
  copy(s, wide, copy_of);
  Tensor v = heads(wide, 5, 4, 16);
  l2_normalize(s, v, 1e-6f, v);
  Tensor want = Tensor::empty({6, 4, 16}, DType::kBF16);
  l2_normalize(s, contiguous(s, heads(copy_of, 5, 4, 16)), 1e-6f, want);
  expect_same_bits(s, want, v, "l2_normalize in place");
  // The first 5 columns are untouched.
  expect_same_bits(s, copy_of.slice(1, 0, 5), wide.slice(1, 0, 5), "columns before the view");
}

}  // namespace
}  // namespace vt
