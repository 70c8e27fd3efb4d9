// LlmEngine: the synchronous engine loop. add_request(), then step() until
// has_unfinished() is false; each step schedules, builds the StepPlan,
// runs the ModelExecutor, samples, applies stopping (tokens in the scheduler,
// stop strings here through the detokenizer) and returns what each request
// produced in that step.
//
// n > 1 (parallel sampling, as vLLM does it): the request becomes n child
// requests sharing the prompt (the prefix cache computes it once); child i
// uses seed + i when a seed is given. Outputs carry the caller's id and the
// child index. Not thread-safe: AsyncEngine runs it on one thread.
//
// Constrained requests (SamplingParams::constraint): each step's masks are filled on
// a mask worker thread while the executor runs that step's forward pass (after the
// previous step's tokens were accepted, so each mask sees every earlier token), and
// are ready before sampling. After the step each sampled token goes to accept(); a
// rejection, a mask with no allowed token or a throwing constraint ends the request
// with kError (EngineOutput::error says why); terminated() ends it with kStop.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/mask_worker.h"
#include "engine/model_executor.h"
#include "engine/sampler.h"
#include "engine/scheduler.h"
#include "text/detokenizer.h"
#include "text/stop_strings.h"

namespace vtllm::engine {

struct EngineConfig {
  SchedulerConfig scheduler;
  KvCacheConfig kv_cache;
  SamplerConfig sampler;
  // eos of config.json and generation_config.json (eos_token_id may be a list there).
  std::vector<int32_t> eos_token_ids;
  // Jump-forward: after a constrained request's sampled token, append the run of tokens
  // its TokenConstraint forces (each the only one allowed) without sampling them; the
  // next step computes them as one chunk. The tokens are those sampling would give, but
  // they draw no random numbers (a seeded request's later samples differ from a run
  // without it). Requests with logprobs, allowed_token_ids, bad_words or min_tokens not
  // yet reached sample every token.
  bool jump_forward = false;
};

struct EngineOutput {
  std::string request_id;  // as given to add_request
  int index = 0;           // which of the n samples
  std::vector<int32_t> new_token_ids;
  std::string new_text;    // with a detokenizer only
  std::vector<SampleResult> logprobs;  // one per new token when params.logprobs is set
  // params.prompt_logprobs (vLLM's): one entry per prompt token, the first empty, entry
  // i the raw logprob of prompt token i given tokens 0..i-1 (its rank, the top-N). In
  // the request's first output only; with n > 1 in sample 0's only.
  std::vector<std::optional<SampleResult>> prompt_logprobs;
  bool finished = false;
  FinishReason finish_reason = FinishReason::kNone;
  std::optional<int32_t> stop_token;
  std::string stop_string;
  std::string error;  // with kError: what the request's TokenConstraint did
  int64_t num_prompt_tokens = 0;
  int64_t num_cached_tokens = 0;  // prefix-cache hit at admission
  // When the scheduler first admitted the request (for queue/prefill time metrics).
  std::optional<std::chrono::steady_clock::time_point> first_scheduled;
};

// `params` with bad_words_token_ids made from bad_words by `tokenizer` when it has words
// and no ids (vLLM's SamplingParams.update_from_tokenizer: each word, left-stripped, is
// encoded without special tokens as is and with a leading space; the spaced form is kept
// when its first token differs and its length is the same). Throws when words need a
// tokenizer and it is null.
SamplingParams resolve_bad_words(SamplingParams params, const text::Tokenizer* tokenizer);

// The CPU-side cost of constraint masks so far (for a bench line; not a gate).
struct MaskStats {
  int64_t rows = 0;         // masks filled
  int64_t steps = 0;        // steps with at least one constrained row
  double fill_seconds = 0;  // on the mask worker, in fill_bitmask and its checks
  double wait_seconds = 0;  // the engine thread blocked on the worker before sampling
};

class LlmEngine {
 public:
  // `tokenizer` detokenizes each request's output (EngineOutput::new_text) and
  // must outlive the engine; it may be null: no text, and requests with stop
  // strings are refused.
  LlmEngine(const EngineConfig& config, std::unique_ptr<ModelExecutor> executor,
            const text::Tokenizer* tokenizer = nullptr);

  // Validates the params (throws naming the field) and queues the request. A multimodal
  // request passes its expanded prompt and `mm` (make_multimodal_prompt); it is refused
  // (naming why) when the executor cannot run vision items or `mm` does not fit the
  // prompt.
  // params.constraint is called once per sample here (its errors refuse the request).
  void add_request(const std::string& id, std::vector<int32_t> prompt, const SamplingParams& params,
                   int priority = 0, std::shared_ptr<const MultimodalPrompt> mm = nullptr);

  std::vector<EngineOutput> step();

  // Aborts every sample of the request now; its blocks and slots are free on return.
  bool abort(const std::string& id);

  bool has_unfinished() const { return scheduler_.has_unfinished(); }
  SchedulerStats stats() const { return scheduler_.stats(); }
  EncoderCacheStats encoder_cache_stats() const { return scheduler_.encoder_cache_stats(); }
  int64_t total_scheduled_tokens() const { return total_scheduled_tokens_; }
  const MaskStats& mask_stats() const { return mask_stats_; }
  // Tokens appended by jump-forward (EngineConfig::jump_forward) so far.
  int64_t forced_tokens() const { return forced_tokens_; }

 private:
  struct Tracked {
    std::string parent;
    int index = 0;
    std::optional<text::IncrementalDetokenizer> detok;
    std::optional<text::StopStringMatcher> stops;
    bool include_stop = false;  // include_stop_str_in_output
    // Prompt logprobs gathered so far (entry 0 empty; entries come in position order,
    // chunk by chunk; recomputed positions after a preemption are not added twice),
    // handed out in the first output.
    std::vector<std::optional<SampleResult>> prompt_logprobs;
    bool prompt_logprobs_sent = false;
  };

  // drop_last: the last new token is the eos / stop token that ended it (no text).
  EngineOutput make_output(const RequestOutput& o, Tracked& t, std::vector<SampleResult> lps,
                           bool drop_last);
  // The mask worker's job: each constrained row's mask into its batch row; a row whose
  // constraint throws or allows nothing gets an all-allowed mask and its error.
  void fill_masks(vt::SampleBatch& batch, std::span<const std::shared_ptr<TokenConstraint>> cs,
                  int64_t vocab, std::vector<std::string>& errors);
  // Jump-forward: appends c's forced run (at most kMaxForcedRun tokens, each accepted by
  // c) to o's request r when nothing else masks its tokens; true when it appended any.
  bool append_forced_run(RequestOutput& o, const Request& r, TokenConstraint& c);
  static constexpr size_t kMaxForcedRun = 64;

  EngineConfig config_;
  std::unique_ptr<ModelExecutor> executor_;
  const text::Tokenizer* tokenizer_;
  Scheduler scheduler_;
  Sampler sampler_;
  std::unordered_map<std::string, Tracked> tracked_;               // by internal id
  std::unordered_map<std::string, std::vector<std::string>> children_;  // caller id -> internal ids
  int64_t total_scheduled_tokens_ = 0;
  int64_t forced_tokens_ = 0;
  MaskStats mask_stats_;
  MaskWorker mask_worker_;  // last member: joined first, while the rest is alive
};

}  // namespace vtllm::engine
