#include "multimodal/prompt_expansion.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "base/error.h"
#include "text/tokenizer.h"

namespace vtllm::multimodal {
namespace {

// Python's format(x, ".1f") from the exact binary value of x (x in [2^-20, 2^30)), in
// integers: x = m * 2^e, and 10x is compared with the midpoints k + 1/2.
std::string reference_fixed1(double x) {
  int e = 0;
  const double frac = std::frexp(x, &e);  // x = frac * 2^e, frac in [0.5, 1)
  const auto m = static_cast<unsigned __int128>(std::ldexp(frac, 53));
  e -= 53;  // x = m * 2^e, e < 0 here
  const int s = -e;
  const unsigned __int128 ten_m = m * 10;  // 10x = ten_m / 2^s
  const unsigned __int128 k = ten_m >> s;
  const unsigned __int128 rem2 = (ten_m - (k << s)) * 2;  // compared with 2^s (the midpoint)
  const unsigned __int128 half = static_cast<unsigned __int128>(1) << s;
  unsigned __int128 q = k;
  if (rem2 > half || (rem2 == half && (k & 1))) ++q;
  const auto qi = static_cast<unsigned long long>(q);
  return std::to_string(qi / 10) + "." + std::to_string(qi % 10);
}

TEST(FormatFixed1, RoundsLikePython) {
  EXPECT_EQ(format_fixed1(0.25), "0.2");  // a tie: to even
  EXPECT_EQ(format_fixed1(0.35), "0.3");  // 0.35 is below 0.35 in binary
  EXPECT_EQ(format_fixed1(0.45), "0.5");  // and 0.45 above
  EXPECT_EQ(format_fixed1(0.0), "0.0");
  EXPECT_EQ(format_fixed1((0.0 / 30 + 19.0 / 30) / 2), "0.3");  // §14.4's example
  EXPECT_EQ(format_fixed1((38.0 / 30 + 56.0 / 30) / 2), "1.6");
  EXPECT_EQ(format_fixed1((75.0 / 30 + 94.0 / 30) / 2), "2.8");
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    // Frame averages (a + b) / 2 / fps, and exact ties k/20 that stress the rounding.
    const double fps = 1 + double(rng() % 600) / 10;
    const double a = double(rng() % 5000), b = a + double(rng() % 4);
    for (double x :
         {(a / fps + b / fps) / 2, double(rng() % 100000) / 20, 1.0 + (rng() % 1000) * 0.05})
      ASSERT_EQ(format_fixed1(x), reference_fixed1(x)) << x;
  }
}

VisionInput image(int64_t h, int64_t w) {
  VisionInput v;
  v.kind = MediaKind::kImage;
  v.grid_h = h, v.grid_w = w;
  return v;
}

VisionInput video(int64_t t, int64_t h, int64_t w, std::vector<double> ts) {
  VisionInput v;
  v.kind = MediaKind::kVideo;
  v.grid_t = t, v.grid_h = h, v.grid_w = w;
  v.timestamps = std::move(ts);
  return v;
}

std::string repeat(const std::string& s, int64_t n) {
  std::string out;
  for (int64_t i = 0; i < n; ++i) out += s;
  return out;
}

// transformers' way: replace the pads in the *text*, then tokenize the whole text.
std::string expand_text(const std::string& text, const std::vector<const VisionInput*>& items) {
  std::vector<const VisionInput*> kinds[2];
  for (const VisionInput* v : items) kinds[v->kind == MediaKind::kImage ? 0 : 1].push_back(v);
  const std::string pad[2] = {"<|image_pad|>", "<|video_pad|>"};
  std::string out;
  size_t next[2] = {0, 0};
  for (size_t i = 0; i < text.size();) {
    int k = -1;
    for (int j = 0; j < 2; ++j)
      if (text.compare(i, pad[j].size(), pad[j]) == 0) k = j;
    if (k < 0) {
      out += text[i++];
      continue;
    }
    const VisionInput& v = *kinds[k][next[k]++];
    if (k == 0) {
      out += repeat(pad[0], v.num_tokens(2));
    } else {
      char buf[64];
      for (int64_t t = 0; t < v.grid_t; ++t) {
        std::snprintf(buf, sizeof buf, "<%.1f seconds>", v.timestamps[size_t(t)]);
        out += buf + std::string("<|vision_start|>") + repeat(pad[1], v.grid_h * v.grid_w / 4) +
               "<|vision_end|>";
      }
    }
    i += pad[k].size();
  }
  return out;
}

class PromptExpansionTokenizer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tok_ = new text::Tokenizer(
        text::Tokenizer::from_dir(std::string(VTLLM_SOURCE_DIR) + "/models/tiny-qwen3.5"));
  }
  static void TearDownTestSuite() { delete tok_; }
  static VisionTokenIds ids() {
    return {*tok_->token_to_id("<|image_pad|>"), *tok_->token_to_id("<|video_pad|>"),
            *tok_->token_to_id("<|vision_start|>"), *tok_->token_to_id("<|vision_end|>")};
  }
  static EncodeText encoder() {
    return [](std::string_view s) { return tok_->encode(s, false); };
  }
  static text::Tokenizer* tok_;
};
text::Tokenizer* PromptExpansionTokenizer::tok_ = nullptr;

TEST_F(PromptExpansionTokenizer, EqualsTokenizingTheExpandedText) {
  const VisionInput a = image(4, 6), b = image(2, 2);
  const VisionInput v = video(3, 4, 4, {0.31666666666666665, 1.5666666666666667, 0.25});
  const std::string text =
      "<|im_start|>user\nLook <|vision_start|><|image_pad|><|vision_end|> and "
      "<|vision_start|><|video_pad|><|vision_end|>then<|vision_start|><|image_pad|><|vision_end|>"
      "?<|im_end|>\n<|im_start|>assistant\n";
  // Items given videos first: each kind keeps its own order.
  const std::vector<const VisionInput*> items = {&v, &a, &b};
  const std::vector<int32_t> ids0 = tok_->encode(text, false);
  const ExpandedPrompt e = expand_prompt(ids0, items, ids(), 2, encoder());
  EXPECT_EQ(e.ids, tok_->encode(expand_text(text, items), false));

  ASSERT_EQ(e.placements.size(), 3u);
  // Every run holds its item's pads; an item's runs add up to its token count.
  for (size_t i = 0; i < items.size(); ++i) {
    const ItemPlacement& p = e.placements[i];
    const int32_t pad = items[i]->kind == MediaKind::kImage ? ids().image_pad : ids().video_pad;
    EXPECT_EQ(p.num_placeholders(), items[i]->num_tokens(2));
    EXPECT_EQ(p.runs.size(), size_t(items[i]->grid_t));
    for (const PlaceholderRun& r : p.runs) {
      EXPECT_GE(r.start, p.span_begin);
      EXPECT_LE(r.start + r.length, p.span_end);
      for (int64_t j = r.start; j < r.start + r.length; ++j) EXPECT_EQ(e.ids[size_t(j)], pad);
      EXPECT_NE(e.ids[size_t(r.start - 1)], pad);
      EXPECT_NE(e.ids[size_t(r.start + r.length)], pad);
    }
  }
  EXPECT_LT(e.placements[1].span_end, e.placements[0].span_begin);  // image a comes first
  EXPECT_LT(e.placements[0].span_end, e.placements[2].span_begin);
  // 5.17 keeps the template's own vision_start/end around a video.
  EXPECT_EQ(e.ids[size_t(e.placements[0].span_begin - 1)], ids().vision_start);
  EXPECT_EQ(e.ids[size_t(e.placements[0].span_end)], ids().vision_end);
  EXPECT_EQ(e.ids[size_t(e.placements[0].span_end - 1)], ids().vision_end);
  // The timestamps' text: "<0.3 seconds>" opens the video's expansion.
  const auto first = tok_->encode("<0.3 seconds>", false);
  EXPECT_TRUE(std::equal(first.begin(), first.end(), e.ids.begin() + e.placements[0].span_begin));

  // The positions of the expanded prompt take the grids in the same order.
  const MropePositions pos = compute_mrope_positions(e.ids, media_grids(items), ids().pads(), 2);
  EXPECT_EQ(pos.num_tokens(), int64_t(e.ids.size()));
  EXPECT_LT(pos.delta, 0);
}

TEST_F(PromptExpansionTokenizer, CountMismatchNamesTheKind) {
  const VisionInput a = image(2, 2);
  const std::vector<int32_t> ids0 =
      tok_->encode("<|vision_start|><|video_pad|><|vision_end|>", false);
  const std::vector<const VisionInput*> items = {&a};
  try {
    expand_prompt(ids0, items, ids(), 2, encoder());
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("0 image placeholders"), std::string::npos) << m;
  }
  const std::vector<const VisionInput*> none;
  try {
    expand_prompt(ids0, none, ids(), 2, encoder());
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("1 video placeholder (<|video_pad|>) but 0 videos were given"),
              std::string::npos)
        << m;
  }
  const VisionInput bad = video(2, 2, 2, {0.5});  // one timestamp for two temporal indices
  const std::vector<const VisionInput*> vids = {&bad};
  EXPECT_THROW(expand_prompt(ids0, vids, ids(), 2, encoder()), Error);
}

}  // namespace
}  // namespace vtllm::multimodal
