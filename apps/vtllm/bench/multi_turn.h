// `vtllm bench serve --multi-turn`: conversations whose every turn resends the
// whole history, for prefix caching (docs/BENCHMARKS.md, issue 25).
//
// C conversations of T turns. Turn 1 of conversation c is [system prefix] + user
// message; turn k+1 is turn k's prompt + its answer (kAppend: the ids the server
// generated) or other ids of the same length in its place (kRewrite, like a chat
// template that drops earlier reasoning, or an agent that edits a tool result) + a
// new user message. Every id is drawn from the workload's token range, seeded by
// (seed, conversation, turn), so every server sees the same prompts except the
// answers it generated itself. `concurrency` workers split the conversations
// (worker w runs w, w + W, ... turn by turn, so other conversations' turns come
// between two turns of one).
//
// Reported per turn index: TTFT, prompt tokens, cached tokens (from the server's
// usage when it reports them) and the reusable tokens: what an ideal prefix cache
// holds (turn 1: the system prefix once another conversation sent it; later turns:
// the previous prompt plus, when appending, the previous answer).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/openai_client.h"
#include "bench/stats.h"
#include "bench/workload.h"

namespace vtllm::bench {

enum class MultiTurnMode { kAppend, kRewrite };
// Where kAppend takes the answer's ids from: the response (vLLM return_token_ids,
// llama.cpp return_tokens; the caller asks for them through extra_body), else the
// server's /tokenize of the answer text (vLLM and vtllm form, or llama.cpp's).
enum class AnswerIds { kAuto, kTokenize, kTokenizeLlama };

MultiTurnMode parse_multi_turn_mode(const std::string& s);  // "append" | "rewrite"
AnswerIds parse_answer_ids(const std::string& s);  // "auto" | "tokenize" | "tokenize-llama"

struct MultiTurnConfig {
  CompletionParams request;  // ids prompts; max_tokens is each answer's length
  WorkloadConfig workload;   // seed and token range (input_len unused)
  int conversations = 32;
  int turns = 8;
  int64_t user_len = 256;  // new tokens per turn
  int64_t system_len = 0;  // shared prefix of every conversation's first turn
  MultiTurnMode mode = MultiTurnMode::kAppend;
  AnswerIds answer_ids = AnswerIds::kAuto;
  int concurrency = 0;  // workers; 0: one per conversation
};

struct TurnSummary {
  int turn = 0;  // 1-based
  int64_t completed = 0, failed = 0;
  Distribution ttft_s;
  int64_t prompt_tokens = 0, reusable_tokens = 0;
  int64_t cached_tokens = 0;         // summed over the requests that reported it
  int64_t cached_reported = 0;       // requests whose server reported cached tokens
  int64_t reusable_of_reported = 0;  // reusable tokens of those requests
  // cached / reusable over the reporting requests (0 when none reported or none reusable).
  double cached_fraction() const;
};

struct MultiTurnResult {
  std::vector<TurnSummary> turns;
  double duration_s = 0;
  int64_t total_output_tokens = 0;
  std::vector<std::string> first_errors;  // up to 5
};

// The token ids of turn `turn` (0-based) of conversation `conv`'s new user message, of
// the shared system prefix, and of a rewritten answer of `n` tokens.
std::vector<int32_t> user_message_ids(const MultiTurnConfig& c, int conv, int turn);
std::vector<int32_t> system_prefix_ids(const MultiTurnConfig& c);
std::vector<int32_t> rewrite_ids(const MultiTurnConfig& c, int conv, int turn, int64_t n);

// Runs every conversation to its last turn (a failed turn ends its conversation).
MultiTurnResult run_multi_turn(const MultiTurnConfig& config);

// The per-turn table, and {"kind": "serve_multi_turn", "config", "turns": [...]} (ms).
void print_multi_turn(std::FILE* out, const MultiTurnResult& r);
std::string multi_turn_json(const MultiTurnConfig& config, const MultiTurnResult& r);

}  // namespace vtllm::bench
