// The multi-turn workload's token ids: a function of (seed, conversation, turn)
// only, inside the token range, different between conversations and turns.
#include "bench/multi_turn.h"

#include <gtest/gtest.h>

#include <set>

#include "base/error.h"

namespace vtllm::bench {
namespace {

MultiTurnConfig config() {
  MultiTurnConfig c;
  c.conversations = 4;
  c.turns = 3;
  c.user_len = 50;
  c.system_len = 40;
  c.workload.seed = 9;
  c.workload.token_lo = 100;
  c.workload.token_hi = 4000;
  return c;
}

TEST(MultiTurnWorkload, IdsAreSeededPerConversationAndTurn) {
  const MultiTurnConfig c = config();
  std::set<std::vector<int32_t>> seen;
  for (int conv = 0; conv < c.conversations; ++conv)
    for (int turn = 0; turn < c.turns; ++turn) {
      const auto ids = user_message_ids(c, conv, turn);
      ASSERT_EQ(ids.size(), 50u);
      for (int32_t id : ids) {
        EXPECT_GE(id, 100);
        EXPECT_LT(id, 4000);
      }
      EXPECT_EQ(ids, user_message_ids(c, conv, turn));  // reproducible
      EXPECT_TRUE(seen.insert(ids).second) << conv << " " << turn;
      const auto rw = rewrite_ids(c, conv, turn, 7);
      EXPECT_EQ(rw.size(), 7u);
      EXPECT_NE(std::vector<int32_t>(ids.begin(), ids.begin() + 7), rw);
    }
  EXPECT_EQ(system_prefix_ids(c).size(), 40u);
  MultiTurnConfig other = c;
  other.workload.seed = 10;
  EXPECT_NE(user_message_ids(other, 0, 0), user_message_ids(c, 0, 0));
  other.system_len = 0;
  EXPECT_TRUE(system_prefix_ids(other).empty());
}

TEST(MultiTurnWorkload, ParsesModesAndRefusesOthers) {
  EXPECT_EQ(parse_multi_turn_mode("append"), MultiTurnMode::kAppend);
  EXPECT_EQ(parse_multi_turn_mode("rewrite"), MultiTurnMode::kRewrite);
  EXPECT_THROW(parse_multi_turn_mode("replace"), Error);
  EXPECT_EQ(parse_answer_ids("tokenize-llama"), AnswerIds::kTokenizeLlama);
  EXPECT_THROW(parse_answer_ids("ids"), Error);
}

TEST(MultiTurnWorkload, CachedFractionIsOfTheReportingRequests) {
  TurnSummary s;
  EXPECT_EQ(s.cached_fraction(), 0);
  s.cached_tokens = 300;
  s.reusable_of_reported = 400;
  s.reusable_tokens = 800;  // half the requests did not report
  EXPECT_DOUBLE_EQ(s.cached_fraction(), 0.75);
}

}  // namespace
}  // namespace vtllm::bench
