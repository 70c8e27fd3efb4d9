// Scheduler: decides, each step, how many tokens of which requests run.
//
// vLLM V1 semantics. schedule() first serves running requests (oldest first),
// each up to its remaining tokens within the step's token budget
// (max_num_batched_tokens); when the KV cache cannot hold a request's new
// tokens, the newest running request (FCFS; under the priority policy the one
// with the largest (priority, arrival)) is preempted by recompute: its blocks
// are freed and it returns to the front of the waiting queue. If nothing was
// preempted, waiting requests are admitted (FCFS, or lowest priority value
// first) while the budget, max_num_seqs and the cache allow, reusing
// prefix-cached blocks. A prompt longer than the budget is chunked over steps
// (chunked prefill); with hybrid prefix caching the step also saves GDN state
// snapshots where they are due, inside a chunk (KvCacheManager::snapshot_within) or
// where the chunk is made to end (prefill_chunk).
// Under FCFS no request starves: the oldest running request is never the one
// preempted while a newer one runs.
//
// update_from_output() appends the sampled tokens, applies the stopping rules
// (max_tokens, max_model_len, eos unless ignore_eos, stop token ids, all held
// back until min_tokens) and frees finished requests.
// Not thread-safe: the engine thread owns it.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/encoder_cache.h"
#include "engine/kv_cache_manager.h"
#include "engine/request.h"

namespace vtllm::engine {

enum class SchedulingPolicy { kFcfs, kPriority };

struct SchedulerConfig {
  int64_t max_num_batched_tokens = 2048;
  int max_num_seqs = 256;
  int64_t max_model_len = 4096;
  bool enable_chunked_prefill = true;
  int64_t long_prefill_token_threshold = 0;  // > 0: cap on one request's tokens per step
  SchedulingPolicy policy = SchedulingPolicy::kFcfs;
  // Vision encoder (multimodal requests). Feature rows encoded per step (vLLM's
  // max_num_encoder_input_tokens; 0: max_num_batched_tokens); an item larger than it
  // still runs when it is the step's first. The encoder cache holds up to
  // encoder_cache_bytes of features, encoder_bytes_per_token each row (out_hidden x
  // the model dtype's size).
  int64_t max_num_encoder_input_tokens = 0;
  int64_t encoder_cache_bytes = int64_t{256} << 20;
  int64_t encoder_bytes_per_token = 1;
};

enum class ScheduleKind { kNew, kResumed, kRunning };

struct ScheduledRequest {
  const Request* request = nullptr;  // valid until the next schedule()
  ScheduleKind kind = ScheduleKind::kRunning;
  int64_t num_computed_tokens = 0;  // tokens whose KV/state is cached before this step
  int64_t num_new_tokens = 0;       // tokens [num_computed, num_computed + num_new) run now
  std::vector<int32_t> new_block_ids;
  std::span<const int32_t> block_ids;  // all of the request's blocks; valid until next schedule()
  std::optional<int32_t> state_slot;   // hybrid models
  std::optional<StateSaveInStep> state_save;  // hybrid prefix caching: a snapshot inside the step
  // True when this step reaches the end of the known tokens, so its sample is kept.
  bool samples() const { return num_computed_tokens + num_new_tokens == request->num_tokens(); }
};

struct SchedulerOutput {
  std::vector<ScheduledRequest> requests;  // running ones first, then new and resumed
  int64_t total_num_scheduled_tokens = 0;
  std::vector<std::string> preempted_ids;
  std::vector<std::string> finished_ids;  // finished or aborted since the previous schedule()
  // Hybrid prefix caching: GDN state copies the runner makes before the step
  // (restoring snapshots into hit requests' slots) and after it (saving snapshots).
  std::vector<StateCopy> state_copies_before;
  std::vector<StateCopy> state_copies_after;
  // Multimodal: the runner drops these encoder cache entries, then encodes these items
  // (keeping their features under VisionInput::hash), before the forward pass. Every
  // placeholder row a scheduled request computes has its item cached or encoded here.
  std::vector<BlockHash> encoder_frees;
  std::vector<std::shared_ptr<const multimodal::VisionInput>> encoder_inputs;
  bool empty() const { return requests.empty(); }
};

// Per scheduled request (same order as SchedulerOutput::requests): the tokens sampled.
struct SampledTokens {
  std::vector<std::vector<int32_t>> tokens;
};

struct RequestOutput {
  std::string id;
  std::vector<int32_t> new_token_ids;
  bool finished = false;
  FinishReason finish_reason = FinishReason::kNone;
  std::optional<int32_t> stop_token;
  std::size_t index = 0;  // position in SchedulerOutput::requests
  int64_t num_prompt_tokens = 0;
  int64_t num_cached_tokens = 0;  // prefix-cache hit at first admission
  std::optional<std::chrono::steady_clock::time_point> first_scheduled;  // Request's
};

struct SchedulerStats {
  int num_waiting = 0;
  int num_running = 0;
  int64_t num_preemptions = 0;
  KvCacheStats kv;
};

class Scheduler {
 public:
  // Throws when a request of max_model_len tokens could not fit the cache alone.
  Scheduler(const SchedulerConfig& config, const KvCacheConfig& kv_config);

  // Takes ownership; throws (naming the request) on the id of a request still
  // waiting or running, or a prompt that leaves no room under max_model_len.
  void add_request(std::unique_ptr<Request> request);

  SchedulerOutput schedule();

  std::vector<RequestOutput> update_from_output(const SchedulerOutput& output,
                                                const SampledTokens& sampled);
  // Appends `tokens` to the output of o's request (running, as update_from_output left
  // it) under the same stopping rules, one at a time, and adds them to o; a stop ends
  // the request as update_from_output would (o.finished, its reason and stop token).
  // The next schedule() computes them with the request's last sampled token.
  void append_outputs(RequestOutput& o, std::span<const int32_t> tokens);

  // Ends a request now with a finished status (abort, or a stop string found by
  // the engine), freeing its blocks and slot. False when unknown or already finished.
  bool finish_request(const std::string& id, RequestStatus status);
  bool abort(const std::string& id) { return finish_request(id, RequestStatus::kFinishedAborted); }

  bool has_unfinished() const { return !waiting_.empty() || !running_.empty(); }
  // A waiting or running request; nullptr once it has finished. A finished id
  // may be reused by a new request at once.
  const Request* find(const std::string& id) const;
  SchedulerStats stats() const;
  const KvCacheManager& kv_cache() const { return kv_; }
  EncoderCacheStats encoder_cache_stats() const { return encoder_.stats(); }
  KvCacheManager& kv_cache() { return kv_; }
  const SchedulerConfig& config() const { return config_; }

 private:
  bool check_stop(Request& r) const;
  // Appends tokens to r's output until a stopping rule ends it (then finished, with o
  // saying how), adding each to o.
  void append(Request& r, std::span<const int32_t> tokens, RequestOutput& o);
  size_t next_waiting() const;
  Request* pick_victim() const;
  void preempt(Request* victim);
  void finish(Request* r, RequestStatus status);
  // Vision items of r that tokens [computed, computed + n) read: cuts n before the first
  // item whose features are neither cached nor encodable within the step's encoder
  // budget and cache room (with `whole`, all or nothing: 0 when anything is cut).
  // commit_encoder() then schedules the encodes and takes the references.
  int64_t plan_encoder(const Request& r, int64_t computed, int64_t n, bool whole) const;
  void commit_encoder(const Request& r, int64_t computed, int64_t n, SchedulerOutput& out);

  SchedulerConfig config_;
  KvCacheManager kv_;
  EncoderCacheManager encoder_;
  int64_t encoder_budget_ = 0;  // feature rows per step
  int64_t encoder_used_ = 0;    // in the step being scheduled
  std::unordered_map<std::string, std::unique_ptr<Request>> requests_;  // waiting or running
  std::vector<std::unique_ptr<Request>> retired_;  // finished since the last schedule()
  std::deque<Request*> waiting_;
  std::vector<Request*> running_;  // in admission order
  std::vector<std::string> finished_since_schedule_;
  uint64_t next_arrival_ = 0;
  int64_t num_preemptions_ = 0;
};

}  // namespace vtllm::engine
