// The packed step inputs of models/layers/batch_inputs.h, built on the host: every
// section where PackedOffsets says, the block table widened with the null block, and
// a graph layout's padding rows (token 0, one key of block 0, slot -1, the scratch
// state slot, position 0); the range checks made before indices go to a device.
#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "models/layers/batch_inputs.h"

namespace vtllm::models {
namespace {

// Two decode requests: contexts 5 and 2, blocks of 4, two blocks per row.
ForwardBatch decode_batch() {
  ForwardBatch b;
  b.block_size = 4;
  b.token_ids = {11, 12};
  b.query_start_loc = {0, 1, 2};
  b.seq_lens = {6, 3};
  b.context_lens = {5, 2};
  b.positions = {5, 2};
  b.slot_mapping = {4 * 3 + 1, 4 * 7 + 2};
  b.max_blocks_per_seq = 2;
  b.block_table = {2, 3, 7, 0};
  b.state_slots = {4, 1};
  b.logits_indices = {0, 1};
  return b;
}

template <class T>
const T* at(const std::vector<int64_t>& words, int64_t off) {
  return reinterpret_cast<const T*>(reinterpret_cast<const char*>(words.data()) + off);
}

TEST(PackStep, SectionsHoldTheBatch) {
  const ForwardBatch b = decode_batch();
  const RopeSpec rope{8, 10000.0, {}};
  PackedOffsets o{};
  const std::vector<int64_t> w = pack_step(b, &rope, vt::DType::kF32, nullptr, &o);
  EXPECT_EQ(o.end, packed_bytes(2, 2, 2, 8));
  EXPECT_EQ(int64_t(w.size()) * 8, (o.end + 7) / 8 * 8);
  for (int64_t off : {o.query_start_loc, o.seq_lens, o.block_table, o.state_slots,
                      o.slot_mapping, o.cos_sin})
    EXPECT_EQ(off % 16, 0);
  EXPECT_EQ(at<int32_t>(w, o.token_ids)[1], 12);
  EXPECT_EQ(at<int32_t>(w, o.query_start_loc)[2], 2);
  EXPECT_EQ(at<int32_t>(w, o.seq_lens)[0], 6);
  EXPECT_EQ(at<int32_t>(w, o.block_table)[2], 7);
  EXPECT_EQ(at<int32_t>(w, o.state_slots)[0], 4);
  EXPECT_EQ(at<int64_t>(w, o.slot_mapping)[1], 30);
  // cos_sin row 1 is position 2: cos(2 * inv_freq[0]) with inv_freq[0] = 1.
  EXPECT_FLOAT_EQ(at<float>(w, o.cos_sin)[8], float(std::cos(2.0)));
  EXPECT_FLOAT_EQ(at<float>(w, o.cos_sin)[8 + 4], float(std::sin(2.0)));
}

TEST(PackStep, GraphLayoutPadsRows) {
  const ForwardBatch b = decode_batch();
  const RopeSpec rope{8, 10000.0, {}};
  StepLayout l;
  l.batch = 4;
  l.table_width = 5;
  l.pad_state_slot = 9;
  l.bounds = vt::AttentionBounds{4, 1, 20};
  PackedOffsets o{};
  const std::vector<int64_t> w = pack_step(b, &rope, vt::DType::kBF16, &l, &o);
  EXPECT_EQ(o.end, packed_bytes(4, 4, 5, 8));
  const int32_t* qsl = at<int32_t>(w, o.query_start_loc);
  const int32_t* seq = at<int32_t>(w, o.seq_lens);
  const int32_t* table = at<int32_t>(w, o.block_table);
  const int32_t* slots = at<int32_t>(w, o.state_slots);
  const int64_t* slot_map = at<int64_t>(w, o.slot_mapping);
  EXPECT_EQ(std::vector<int32_t>(qsl, qsl + 5), (std::vector<int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(std::vector<int32_t>(seq, seq + 4), (std::vector<int32_t>{6, 3, 1, 1}));
  EXPECT_EQ(std::vector<int32_t>(table, table + 20),
            (std::vector<int32_t>{2, 3, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(std::vector<int32_t>(slots, slots + 4), (std::vector<int32_t>{4, 1, 9, 9}));
  EXPECT_EQ(std::vector<int64_t>(slot_map, slot_map + 4), (std::vector<int64_t>{13, 30, -1, -1}));
  EXPECT_EQ(at<int32_t>(w, o.token_ids)[3], 0);
  // Padding rows sit at position 0: cos 1, sin 0 (exact in bf16).
  const float* cs = at<float>(w, o.cos_sin);
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(cs[3 * 8 + i], 1.0f);
    EXPECT_EQ(cs[3 * 8 + 4 + i], 0.0f);
  }
  StepLayout small = l;
  small.batch = 1;
  EXPECT_THROW(pack_step(b, &rope, vt::DType::kBF16, &small), vtllm::Error);
}

TEST(PackStep, RangeChecksNameTheField) {
  const ForwardBatch b = decode_batch();
  validate_step_ranges(b, 8, 5, 100);
  EXPECT_THROW(validate_step_ranges(b, 7, 5, 100), vtllm::Error);   // slot 30 >= 7 blocks x 4
  EXPECT_THROW(validate_step_ranges(b, 8, 4, 100), vtllm::Error);   // state slot 4
  EXPECT_THROW(validate_step_ranges(b, 8, 5, 12), vtllm::Error);    // token 12
  ForwardBatch dup = b;
  dup.state_slots = {1, 1};
  EXPECT_THROW(validate_step_ranges(dup, 8, 5, 100), vtllm::Error);
  ForwardBatch far = b;
  far.seq_lens = {9, 3};
  far.context_lens = {8, 2};
  EXPECT_THROW(validate_step_ranges(far, 8, 5, 100), vtllm::Error);  // 9 > 2 blocks of 4
}

}  // namespace
}  // namespace vtllm::models
