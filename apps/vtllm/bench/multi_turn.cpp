#include "bench/multi_turn.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/error.h"
#include "base/hash.h"

namespace vtllm::bench {

namespace {

// Distinct seed streams for the three kinds of segment.
constexpr uint64_t kSystemStream = 0x5157, kUserStream = 0x05e7, kRewriteStream = 0x7e37;

std::vector<int32_t> segment(const MultiTurnConfig& c, uint64_t stream, int64_t index, int64_t n) {
  if (n <= 0) return {};
  WorkloadConfig w = c.workload;
  w.kind = PromptKind::kTokenIds;
  w.input_len = n;
  w.seed = splitmix64(c.workload.seed ^ splitmix64(stream));
  // make_prompts' prompt i depends only on (config, i): generate just the one asked for.
  w.seed = splitmix64(w.seed + uint64_t(index));
  return make_prompts(w, 1)[0].ids;
}

void append(std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
}

}  // namespace

MultiTurnMode parse_multi_turn_mode(const std::string& s) {
  if (s == "append") return MultiTurnMode::kAppend;
  if (s == "rewrite") return MultiTurnMode::kRewrite;
  VT_THROW("--multi-turn-mode '", s, "': expected 'append' or 'rewrite'");
}

AnswerIds parse_answer_ids(const std::string& s) {
  if (s == "auto") return AnswerIds::kAuto;
  if (s == "tokenize") return AnswerIds::kTokenize;
  if (s == "tokenize-llama") return AnswerIds::kTokenizeLlama;
  VT_THROW("--answer-ids '", s, "': expected 'auto', 'tokenize' or 'tokenize-llama'");
}

double TurnSummary::cached_fraction() const {
  return reusable_of_reported > 0 ? double(cached_tokens) / double(reusable_of_reported) : 0;
}

std::vector<int32_t> user_message_ids(const MultiTurnConfig& c, int conv, int turn) {
  return segment(c, kUserStream, int64_t(conv) * c.turns + turn, c.user_len);
}

std::vector<int32_t> system_prefix_ids(const MultiTurnConfig& c) {
  return segment(c, kSystemStream, 0, c.system_len);
}

std::vector<int32_t> rewrite_ids(const MultiTurnConfig& c, int conv, int turn, int64_t n) {
  return segment(c, kRewriteStream, int64_t(conv) * c.turns + turn, n);
}

MultiTurnResult run_multi_turn(const MultiTurnConfig& config) {
  VT_CHECK(config.conversations > 0, "--conversations must be positive");
  VT_CHECK(config.turns > 0, "--turns must be positive");
  VT_CHECK(config.user_len > 0, "--user-len must be positive");
  VT_CHECK(config.system_len >= 0, "--system-len must not be negative");
  const int workers = config.concurrency > 0 ? std::min(config.concurrency, config.conversations)
                                             : config.conversations;
  const std::vector<int32_t> system = system_prefix_ids(config);

  struct Record {
    RequestTiming t;
    int64_t reusable = 0;
  };
  // records[turn][conv]
  std::vector<std::vector<Record>> records(size_t(config.turns),
                                           std::vector<Record>(size_t(config.conversations)));
  std::vector<std::vector<bool>> ran(size_t(config.turns),
                                     std::vector<bool>(size_t(config.conversations), false));
  std::mutex mu;
  std::vector<std::string> errors;
  CompletionParams params = config.request;
  params.keep_output = config.mode == MultiTurnMode::kAppend;

  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      CompletionClient client(params);
      struct Conversation {
        int id;
        std::vector<int32_t> history;
        int64_t reusable = 0;
        bool alive = true;
      };
      std::vector<Conversation> mine;
      for (int c = w; c < config.conversations; c += workers) {
        Conversation conv{c, system, c == 0 ? 0 : int64_t(system.size()), true};
        mine.push_back(std::move(conv));
      }
      for (int turn = 0; turn < config.turns; ++turn) {
        for (Conversation& conv : mine) {
          if (!conv.alive) continue;
          append(conv.history, user_message_ids(config, conv.id, turn));
          Prompt p;
          p.ids = conv.history;
          p.nominal_tokens = int64_t(p.ids.size());
          Record rec;
          rec.reusable = conv.reusable;
          rec.t = client.run(p);
          std::vector<int32_t> answer;
          if (rec.t.ok && config.mode == MultiTurnMode::kAppend) {
            answer = rec.t.token_ids;
            try {
              if (answer.empty() || config.answer_ids != AnswerIds::kAuto)
                answer =
                    client.tokenize(rec.t.text, config.answer_ids == AnswerIds::kTokenizeLlama);
            } catch (const Error& e) {
              rec.t.ok = false;
              rec.t.error = e.what();
            }
          }
          if (rec.t.ok) {
            const int64_t prompt_len = int64_t(conv.history.size());
            if (config.mode == MultiTurnMode::kAppend) {
              append(conv.history, answer);
              conv.reusable = prompt_len + int64_t(answer.size());
            } else {
              append(conv.history,
                     rewrite_ids(config, conv.id, turn, std::max<int64_t>(rec.t.output_tokens, 1)));
              conv.reusable = prompt_len;
            }
          } else {
            conv.alive = false;
            std::lock_guard<std::mutex> lock(mu);
            if (errors.size() < 5)
              errors.push_back(
                  str_cat("conversation ", conv.id, " turn ", turn + 1, ": ", rec.t.error));
          }
          rec.t.text.clear();
          rec.t.token_ids.clear();
          std::lock_guard<std::mutex> lock(mu);
          records[size_t(turn)][size_t(conv.id)] = std::move(rec);
          ran[size_t(turn)][size_t(conv.id)] = true;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();

  MultiTurnResult r;
  r.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.first_errors = errors;
  for (int turn = 0; turn < config.turns; ++turn) {
    TurnSummary s;
    s.turn = turn + 1;
    std::vector<double> ttft;
    for (int c = 0; c < config.conversations; ++c) {
      if (!ran[size_t(turn)][size_t(c)]) continue;
      const Record& rec = records[size_t(turn)][size_t(c)];
      if (!rec.t.ok) {
        ++s.failed;
        continue;
      }
      ++s.completed;
      ttft.push_back(rec.t.ttft_s);
      s.prompt_tokens += rec.t.prompt_tokens;
      s.reusable_tokens += rec.reusable;
      r.total_output_tokens += rec.t.output_tokens;
      if (rec.t.cached_tokens >= 0) {
        ++s.cached_reported;
        s.cached_tokens += rec.t.cached_tokens;
        s.reusable_of_reported += rec.reusable;
      }
    }
    s.ttft_s = summarize(ttft);
    r.turns.push_back(s);
  }
  return r;
}

void print_multi_turn(std::FILE* out, const MultiTurnResult& r) {
  std::fprintf(out, "%4s %9s | %-23s | %10s %10s %10s %8s\n", "turn", "ok/fail",
               "TTFT ms mean/med/p99", "prompt", "reusable", "cached", "cached/r");
  for (const TurnSummary& s : r.turns) {
    char okfail[32], ttft[64], frac[16];
    std::snprintf(okfail, sizeof okfail, "%lld/%lld", (long long)s.completed, (long long)s.failed);
    std::snprintf(ttft, sizeof ttft, "%.1f/%.1f/%.1f", s.ttft_s.mean * 1e3, s.ttft_s.median * 1e3,
                  s.ttft_s.p99 * 1e3);
    if (s.cached_reported > 0)
      std::snprintf(frac, sizeof frac, "%.1f%%", 100 * s.cached_fraction());
    else
      std::snprintf(frac, sizeof frac, "n/a");
    std::fprintf(out, "%4d %9s | %-23s | %10lld %10lld %10lld %8s\n", s.turn, okfail, ttft,
                 (long long)s.prompt_tokens, (long long)s.reusable_tokens,
                 (long long)s.cached_tokens, frac);
  }
  if (!r.turns.empty() && r.turns.front().ttft_s.mean > 0)
    std::fprintf(out, "TTFT mean, turn %d / turn 1: %.2f; %.1f s, %lld output tokens\n",
                 r.turns.back().turn, r.turns.back().ttft_s.mean / r.turns.front().ttft_s.mean,
                 r.duration_s, (long long)r.total_output_tokens);
  for (const std::string& e : r.first_errors) std::fprintf(out, "      error: %s\n", e.c_str());
  std::fflush(out);
}

std::string multi_turn_json(const MultiTurnConfig& config, const MultiTurnResult& r) {
  nlohmann::ordered_json j;
  j["kind"] = "serve_multi_turn";
  nlohmann::ordered_json c;
  c["base_url"] = config.request.base_url;
  c["endpoint"] = config.request.endpoint;
  c["model"] = config.request.model;
  c["mode"] = config.mode == MultiTurnMode::kAppend ? "append" : "rewrite";
  c["conversations"] = config.conversations;
  c["turns"] = config.turns;
  c["user_len"] = config.user_len;
  c["system_len"] = config.system_len;
  c["output_len"] = config.request.max_tokens;
  c["concurrency"] = config.concurrency;
  c["seed"] = config.workload.seed;
  c["extra_body"] = nlohmann::ordered_json::parse(config.request.extra_body);
  j["config"] = c;
  j["duration_s"] = r.duration_s;
  j["total_output_tokens"] = r.total_output_tokens;
  nlohmann::ordered_json ts = nlohmann::ordered_json::array();
  for (const TurnSummary& s : r.turns) {
    nlohmann::ordered_json t;
    t["turn"] = s.turn;
    t["completed"] = s.completed;
    t["failed"] = s.failed;
    t["ttft_ms"] = {{"mean", s.ttft_s.mean * 1e3},
                    {"median", s.ttft_s.median * 1e3},
                    {"p90", s.ttft_s.p90 * 1e3},
                    {"p99", s.ttft_s.p99 * 1e3}};
    t["prompt_tokens"] = s.prompt_tokens;
    t["reusable_tokens"] = s.reusable_tokens;
    t["cached_tokens"] = s.cached_tokens;
    t["cached_reported"] = s.cached_reported;
    t["cached_fraction_of_reusable"] = s.cached_reported > 0
                                           ? nlohmann::ordered_json(s.cached_fraction())
                                           : nlohmann::ordered_json();
    ts.push_back(std::move(t));
  }
  j["turns"] = std::move(ts);
  j["errors"] = r.first_errors;
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace vtllm::bench
