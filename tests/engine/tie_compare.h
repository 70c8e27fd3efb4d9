// Comparing greedy token streams of two bf16 CUDA runs that may round differently.
//
// Two CUDA runs of one request are bit-identical only when every kernel sees the same
// shapes: batching, graph padding and split-K choices change summation orders (vLLM
// makes the same caveat). What stays true is that they pick the same greedy token
// wherever the top-2 logits are apart by more than rounding. So a run records, per
// generated token, the margin between its top-2 raw logprobs (= the top-2 logit gap),
// and two runs must agree token for token until their first difference, which must sit
// at a step where both runs saw a margin inside kTieBand; after it the streams are not
// compared (they continue from different tokens). The band: 0.25, four bf16 ulps of a
// logit in [4, 8) and two in [8, 16), where the tiny fixtures' top logits lie.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "engine/llm_engine.h"

namespace vtllm::engine {

inline constexpr float kTieBand = 0.25f;

struct TokenTrace {
  std::vector<int32_t> tokens;
  std::vector<float> margins;  // top-1 minus top-2 logprob per token
};

// Appends an engine output to its request's trace (the request must ask logprobs >= 2).
inline void record(std::map<std::string, TokenTrace>& traces, const EngineOutput& o) {
  TokenTrace& t = traces[o.request_id];
  t.tokens.insert(t.tokens.end(), o.new_token_ids.begin(), o.new_token_ids.end());
  for (const SampleResult& s : o.logprobs) {
    ASSERT_GE(s.top_logprobs.size(), 2u) << o.request_id;
    t.margins.push_back(s.top_logprobs[0].logprob - s.top_logprobs[1].logprob);
  }
}

// Expects `a` and `b` equal up to a tie (above); returns the number of requests that
// diverged at a tie, printing each.
inline int expect_equal_up_to_ties(const std::map<std::string, TokenTrace>& a,
                                   const std::map<std::string, TokenTrace>& b,
                                   const std::string& what) {
  EXPECT_EQ(a.size(), b.size()) << what;
  int diverged = 0;
  for (const auto& [id, ta] : a) {
    const auto it = b.find(id);
    if (it == b.end()) {
      ADD_FAILURE() << what << ": request " << id << " missing from the second run";
      continue;
    }
    const TokenTrace& tb = it->second;
    EXPECT_EQ(ta.tokens.size(), tb.tokens.size()) << what << " " << id;
    EXPECT_EQ(ta.margins.size(), ta.tokens.size()) << what << " " << id;
    EXPECT_EQ(tb.margins.size(), tb.tokens.size()) << what << " " << id;
    const size_t n = std::min({ta.tokens.size(), tb.tokens.size(), ta.margins.size(),
                               tb.margins.size()});
    for (size_t s = 0; s < n; ++s) {
      if (ta.tokens[s] == tb.tokens[s]) continue;
      EXPECT_TRUE(ta.margins[s] <= kTieBand && tb.margins[s] <= kTieBand)
          << what << " " << id << " step " << s << ": tokens " << ta.tokens[s] << " vs "
          << tb.tokens[s] << " with top-2 margins " << ta.margins[s] << " / " << tb.margins[s]
          << " (a divergence outside the tie band " << kTieBand << ")";
      std::printf("[tie] %s %s step %zu: %d vs %d, margins %.4f / %.4f\n", what.c_str(),
                  id.c_str(), s, ta.tokens[s], tb.tokens[s], double(ta.margins[s]),
                  double(tb.margins[s]));
      ++diverged;
      break;
    }
  }
  return diverged;
}

}  // namespace vtllm::engine
