#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "base/error.h"

namespace vtllm::engine {
namespace {

std::vector<int32_t> iota_tokens(int n, int32_t start = 100) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), start);
  return t;
}

std::unique_ptr<Request> req(const std::string& id, int prompt_len, int64_t max_tokens = 4,
                             int32_t start = 100, int priority = 0) {
  SamplingParams p;
  p.max_tokens = max_tokens;
  return std::make_unique<Request>(id, iota_tokens(prompt_len, start), p, priority);
}

SchedulerConfig sched_config(int64_t budget, int seqs = 16, int64_t max_len = 64) {
  SchedulerConfig c;
  c.max_num_batched_tokens = budget;
  c.max_num_seqs = seqs;
  c.max_model_len = max_len;
  return c;
}

KvCacheConfig kv_config(int32_t blocks, int bs = 4, bool caching = true) {
  KvCacheConfig c;
  c.block_size = bs;
  c.num_blocks = blocks;
  c.enable_prefix_caching = caching;
  return c;
}

// Samples token 7 for every request whose step reaches its end.
SampledTokens sample_all(const SchedulerOutput& out, int32_t token = 7) {
  SampledTokens s;
  for (size_t i = 0; i < out.requests.size(); ++i) s.tokens.push_back({token});
  return s;
}

int64_t tokens_for(const SchedulerOutput& out, const std::string& id) {
  for (const auto& s : out.requests)
    if (s.request->id == id) return s.num_new_tokens;
  return 0;
}

TEST(Scheduler, AdmitsWaitingUnderTheTokenBudgetAndChunksTheRest) {
  Scheduler s(sched_config(10), kv_config(40));
  s.add_request(req("a", 6));
  s.add_request(req("b", 9, 4, 500));  // distinct tokens: no prefix hit on a
  auto out = s.schedule();
  EXPECT_EQ(tokens_for(out, "a"), 6);
  EXPECT_EQ(tokens_for(out, "b"), 4);  // chunked: 4 of 9
  EXPECT_EQ(out.total_num_scheduled_tokens, 10);
  EXPECT_TRUE(out.requests[0].samples());
  EXPECT_FALSE(out.requests[1].samples());
  auto res = s.update_from_output(out, sample_all(out));
  ASSERT_EQ(res.size(), 1u);  // b's sample is discarded: its prompt is not done
  EXPECT_EQ(res[0].id, "a");
  EXPECT_EQ(s.find("b")->num_output_tokens(), 0);
  // Next step: running first (a decodes 1 token, b finishes its prompt with 5).
  out = s.schedule();
  EXPECT_EQ(out.requests[0].request->id, "a");
  EXPECT_EQ(tokens_for(out, "a"), 1);
  EXPECT_EQ(tokens_for(out, "b"), 5);
  EXPECT_EQ(out.requests[1].num_computed_tokens, 4);
  res = s.update_from_output(out, sample_all(out));
  EXPECT_EQ(res.size(), 2u);
}

TEST(Scheduler, WithoutChunkedPrefillALongPromptWaitsForAWholeBudget) {
  SchedulerConfig c = sched_config(64);
  c.enable_chunked_prefill = false;
  Scheduler s(c, kv_config(40));
  s.add_request(req("a", 40));
  s.add_request(req("b", 30, 4, 500));
  auto out = s.schedule();
  EXPECT_EQ(tokens_for(out, "a"), 40);
  EXPECT_EQ(tokens_for(out, "b"), 0);  // 30 > 24 left: not split
}

TEST(Scheduler, LongPrefillThresholdCapsOneRequestPerStep) {
  SchedulerConfig c = sched_config(64);
  c.long_prefill_token_threshold = 8;
  Scheduler s(c, kv_config(40));
  s.add_request(req("a", 20));
  s.add_request(req("b", 3));
  auto out = s.schedule();
  EXPECT_EQ(tokens_for(out, "a"), 8);
  EXPECT_EQ(tokens_for(out, "b"), 3);
}

TEST(Scheduler, MaxNumSeqsLimitsRunningRequests) {
  Scheduler s(sched_config(100, 2), kv_config(40));
  for (const char* id : {"a", "b", "c"}) s.add_request(req(id, 3));
  auto out = s.schedule();
  EXPECT_EQ(out.requests.size(), 2u);
  EXPECT_EQ(s.stats().num_waiting, 1);
}

TEST(Scheduler, PreemptsNewestWhenBlocksRunOut) {
  // 6 usable blocks of 4 tokens; two requests of 8 prompt tokens use 4 blocks.
  Scheduler s(sched_config(100, 8, 24), kv_config(7));
  s.add_request(req("old", 8, 16));
  s.add_request(req("new", 8, 16, 500));
  auto out = s.schedule();
  ASSERT_EQ(out.requests.size(), 2u);
  s.update_from_output(out, sample_all(out));
  bool preempted = false;
  for (int step = 0; step < 12 && !preempted; ++step) {
    out = s.schedule();
    if (!out.preempted_ids.empty()) {
      preempted = true;
      EXPECT_EQ(out.preempted_ids, std::vector<std::string>{"new"});
      EXPECT_EQ(tokens_for(out, "old"), 1);
      EXPECT_EQ(s.find("new")->status, RequestStatus::kPreempted);
      EXPECT_EQ(s.find("new")->num_computed_tokens, 0);
      EXPECT_TRUE(s.kv_cache().block_ids("new").empty());
    }
    s.update_from_output(out, sample_all(out));
  }
  ASSERT_TRUE(preempted);
  // The preempted request resumes (recomputing prompt + its outputs) once room is back.
  int64_t resumed_tokens = 0;
  while (s.has_unfinished()) {
    out = s.schedule();
    for (const auto& r : out.requests)
      if (r.kind == ScheduleKind::kResumed) resumed_tokens = r.num_new_tokens;
    s.update_from_output(out, sample_all(out));
  }
  EXPECT_GT(resumed_tokens, 8);  // prompt plus the outputs it had
  EXPECT_EQ(s.stats().kv.num_free_blocks, 6);
}

TEST(Scheduler, PriorityPolicyAdmitsLowestValueFirstAndPreemptsTheLargest) {
  SchedulerConfig c = sched_config(100, 8, 24);
  c.policy = SchedulingPolicy::kPriority;
  Scheduler s(c, kv_config(7));
  s.add_request(req("low", 8, 16, 100, 5));
  s.add_request(req("high", 8, 16, 500, 1));
  auto out = s.schedule();
  ASSERT_EQ(out.requests.size(), 2u);
  EXPECT_EQ(out.requests[0].request->id, "high");
  s.update_from_output(out, sample_all(out));
  std::vector<std::string> preempted;
  while (preempted.empty() && s.has_unfinished()) {
    out = s.schedule();
    preempted = out.preempted_ids;
    s.update_from_output(out, sample_all(out));
  }
  // "low" ran first in the running list only by admission order; it is the victim anyway.
  EXPECT_EQ(preempted, std::vector<std::string>{"low"});
}

TEST(Scheduler, AbortFreesBlocksWhetherWaitingRunningOrMidStep) {
  Scheduler s(sched_config(100, 1), kv_config(20));
  s.add_request(req("run", 6));
  s.add_request(req("wait", 6));
  auto out = s.schedule();
  EXPECT_EQ(s.stats().kv.num_free_blocks, 19 - 2);
  EXPECT_TRUE(s.abort("wait"));
  EXPECT_TRUE(s.abort("run"));  // between schedule() and update_from_output()
  EXPECT_FALSE(s.abort("run"));
  EXPECT_FALSE(s.abort("nobody"));
  EXPECT_EQ(s.stats().kv.num_free_blocks, 19);
  auto res = s.update_from_output(out, sample_all(out));
  EXPECT_TRUE(res.empty());
  EXPECT_FALSE(s.has_unfinished());
  out = s.schedule();
  EXPECT_EQ(out.finished_ids.size(), 2u);
  EXPECT_EQ(s.find("run"), nullptr);
}

TEST(Scheduler, AFinishedIdCanBeReusedAtOnce) {
  Scheduler s(sched_config(100), kv_config(20));
  s.add_request(req("a", 6, 4, 100));
  auto out = s.schedule();
  ASSERT_TRUE(s.abort("a"));
  s.add_request(req("a", 3, 2, 700));  // a new request, same id, before the old step is applied
  EXPECT_TRUE(s.update_from_output(out, sample_all(out)).empty());  // the old one's sample is dropped
  EXPECT_EQ(s.find("a")->num_output_tokens(), 0);
  out = s.schedule();
  EXPECT_EQ(out.finished_ids, std::vector<std::string>{"a"});
  ASSERT_EQ(out.requests.size(), 1u);
  EXPECT_EQ(out.requests[0].num_new_tokens, 3);
  EXPECT_EQ(out.requests[0].request->prompt_token_ids[0], 700);
  auto res = s.update_from_output(out, sample_all(out));
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0].num_prompt_tokens, 3);
  EXPECT_EQ(s.stats().kv.num_free_blocks, 19 - 1);
}

TEST(Scheduler, StopsAtMaxTokensWithLengthReason) {
  Scheduler s(sched_config(100), kv_config(20));
  s.add_request(req("a", 3, 3));
  std::vector<RequestOutput> all;
  while (s.has_unfinished()) {
    auto out = s.schedule();
    for (auto& o : s.update_from_output(out, sample_all(out))) all.push_back(o);
  }
  ASSERT_EQ(all.size(), 3u);
  EXPECT_TRUE(all.back().finished);
  EXPECT_EQ(all.back().finish_reason, FinishReason::kLength);
}

TEST(Scheduler, StopsAtMaxModelLen) {
  Scheduler s(sched_config(100, 4, 12), kv_config(20));
  s.add_request(req("a", 10, 100));
  int outputs = 0;
  while (s.has_unfinished()) {
    auto out = s.schedule();
    outputs += static_cast<int>(s.update_from_output(out, sample_all(out)).size());
  }
  EXPECT_EQ(outputs, 2);
  EXPECT_THROW(s.add_request(req("b", 12)), Error);
}

// Runs one request alone; the model emits `script` tokens in order.
std::vector<RequestOutput> run_script(std::unique_ptr<Request> r, std::vector<int32_t> script) {
  Scheduler s(sched_config(100), kv_config(20));
  s.add_request(std::move(r));
  std::vector<RequestOutput> outs;
  size_t k = 0;
  while (s.has_unfinished()) {
    auto out = s.schedule();
    SampledTokens st;
    st.tokens.push_back({script.at(k++)});
    for (auto& o : s.update_from_output(out, st)) outs.push_back(o);
  }
  return outs;
}

TEST(Scheduler, EosStopsUnlessIgnoredAndNotBeforeMinTokens) {
  auto make = [](bool ignore, int64_t min_tokens) {
    auto r = req("a", 3, 6);
    r->eos_token_ids = {2};
    r->params.ignore_eos = ignore;
    r->params.min_tokens = min_tokens;
    return r;
  };
  auto outs = run_script(make(false, 0), {5, 2, 9, 9, 9, 9});
  EXPECT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs.back().finish_reason, FinishReason::kStop);
  EXPECT_FALSE(outs.back().stop_token.has_value());  // eos is not a stop token
  outs = run_script(make(true, 0), {5, 2, 9, 9, 9, 9});
  EXPECT_EQ(outs.size(), 6u);
  EXPECT_EQ(outs.back().finish_reason, FinishReason::kLength);
  outs = run_script(make(false, 3), {2, 2, 2, 2, 9, 9});
  EXPECT_EQ(outs.size(), 3u);  // eos at outputs 1 and 2 is held back
}

TEST(Scheduler, StopTokenIdsReportTheToken) {
  auto r = req("a", 3, 10);
  r->params.stop_token_ids = {42, 43};
  auto outs = run_script(std::move(r), {5, 6, 43, 1});
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_EQ(outs.back().finish_reason, FinishReason::kStop);
  EXPECT_EQ(outs.back().stop_token, 43);
}

TEST(Scheduler, PrefixHitSchedulesFewerTokens) {
  Scheduler s(sched_config(100), kv_config(40));
  s.add_request(req("a", 17, 2));
  auto out = s.schedule();
  EXPECT_EQ(tokens_for(out, "a"), 17);
  s.update_from_output(out, sample_all(out));
  s.add_request(req("b", 17, 2));
  out = s.schedule();
  EXPECT_EQ(tokens_for(out, "b"), 1);  // 16 tokens cached, the last is recomputed
  EXPECT_EQ(s.find("b")->num_cached_tokens, 16);
  EXPECT_EQ(out.requests[1].num_computed_tokens, 16);
  EXPECT_EQ(out.requests[1].block_ids.size(), 5u);
  EXPECT_EQ(out.requests[1].new_block_ids.size(), 5u);
}

TEST(Scheduler, RejectsConfigsThatCannotHoldOneRequest) {
  EXPECT_THROW(Scheduler(sched_config(100, 4, 64), kv_config(10)), Error);
  SchedulerConfig c = sched_config(16, 4, 32);
  c.enable_chunked_prefill = false;
  EXPECT_THROW(Scheduler(c, kv_config(40)), Error);
  Scheduler s(sched_config(100), kv_config(40));
  s.add_request(req("a", 3));
  EXPECT_THROW(s.add_request(req("a", 3)), Error);
}

}  // namespace
}  // namespace vtllm::engine
