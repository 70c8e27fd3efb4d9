#include "engine/scheduler.h"

#include <algorithm>
#include <tuple>

#include "base/error.h"

namespace vtllm::engine {
namespace {

bool contains(const std::vector<int32_t>& v, int32_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

Scheduler::Scheduler(const SchedulerConfig& config, const KvCacheConfig& kv_config)
    : config_(config),
      kv_(kv_config),
      encoder_(config.encoder_cache_bytes, config.encoder_bytes_per_token),
      encoder_budget_(config.max_num_encoder_input_tokens > 0 ? config.max_num_encoder_input_tokens
                                                              : config.max_num_batched_tokens) {
  VT_CHECK(config.max_num_batched_tokens >= 1,
           "scheduler: max_num_batched_tokens = ", config.max_num_batched_tokens,
           ", expected >= 1");
  VT_CHECK(config.max_num_seqs >= 1, "scheduler: max_num_seqs = ", config.max_num_seqs,
           ", expected >= 1");
  VT_CHECK(config.max_model_len >= 2, "scheduler: max_model_len = ", config.max_model_len,
           ", expected >= 2");
  const int64_t bs = kv_config.block_size;
  const int64_t blocks_needed = (config.max_model_len + bs - 1) / bs;
  if (blocks_needed > kv_config.num_blocks - 1)
    VT_THROW("scheduler: max_model_len = ", config.max_model_len, " needs ", blocks_needed,
             " KV blocks of ", bs, " tokens, the cache has only ", kv_config.num_blocks - 1);
  if (!config.enable_chunked_prefill && config.max_num_batched_tokens < config.max_model_len)
    VT_THROW("scheduler: without chunked prefill max_num_batched_tokens (",
             config.max_num_batched_tokens, ") must be >= max_model_len (", config.max_model_len,
             ")");
}

void Scheduler::add_request(std::unique_ptr<Request> request) {
  VT_CHECK(request != nullptr, "scheduler: null request");
  Request& r = *request;
  if (requests_.contains(r.id)) VT_THROW("scheduler: request id '", r.id, "' is already in use");
  if (r.num_prompt_tokens() >= config_.max_model_len)
    VT_THROW("request '", r.id, "': prompt of ", r.num_prompt_tokens(),
             " tokens leaves no room under max_model_len = ", config_.max_model_len);
  r.status = RequestStatus::kWaiting;
  r.arrival_seq = next_arrival_++;
  waiting_.push_back(&r);
  requests_.emplace(r.id, std::move(request));
}

const Request* Scheduler::find(const std::string& id) const {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : it->second.get();
}

size_t Scheduler::next_waiting() const {
  if (config_.policy == SchedulingPolicy::kFcfs) return 0;
  size_t best = 0;
  for (size_t i = 1; i < waiting_.size(); ++i) {
    const Request* a = waiting_[i];
    const Request* b = waiting_[best];
    if (std::tie(a->priority, a->arrival_seq) < std::tie(b->priority, b->arrival_seq)) best = i;
  }
  return best;
}

Request* Scheduler::pick_victim() const {
  if (config_.policy == SchedulingPolicy::kFcfs) return running_.back();
  Request* worst = running_.front();
  for (Request* r : running_)
    if (std::tie(r->priority, r->arrival_seq) > std::tie(worst->priority, worst->arrival_seq))
      worst = r;
  return worst;
}

void Scheduler::preempt(Request* victim) {
  kv_.free(victim->id);
  encoder_.release_all(victim->id);
  victim->status = RequestStatus::kPreempted;
  victim->num_computed_tokens = 0;
  ++victim->num_preemptions;
  ++num_preemptions_;
  running_.erase(std::find(running_.begin(), running_.end(), victim));
  waiting_.push_front(victim);
}

namespace {

// The item's placeholder rows: [first, last).
int64_t first_row(const MultimodalItem& it) { return it.placement.runs.front().start; }
int64_t last_row(const MultimodalItem& it) {
  const multimodal::PlaceholderRun& r = it.placement.runs.back();
  return r.start + r.length;
}
// Whether any placeholder row of the item lies in [begin, end).
bool reads(const MultimodalItem& it, int64_t begin, int64_t end) {
  for (const multimodal::PlaceholderRun& r : it.placement.runs)
    if (r.start < end && r.start + r.length > begin) return true;
  return false;
}

}  // namespace

int64_t Scheduler::plan_encoder(const Request& r, int64_t computed, int64_t n, bool whole) const {
  if (!r.mm || n <= 0) return n;
  // Without chunked prefill the step's first encoder user runs all its items, or a
  // prompt whose items exceed the budget would never run.
  const bool unbounded = whole && encoder_used_ == 0;
  int64_t used = encoder_used_, fresh = 0;
  std::vector<BlockHash> planned, pinned;
  for (const MultimodalItem& it : r.mm->items) {
    if (first_row(it) >= computed + n) break;
    if (reads(it, computed, computed + n) && encoder_.cached(it.hash()))
      pinned.push_back(it.hash());
  }
  for (const MultimodalItem& it : r.mm->items) {
    if (first_row(it) >= computed + n) break;
    if (!reads(it, computed, computed + n)) continue;
    const BlockHash h = it.hash();
    if (encoder_.cached(h) || std::find(planned.begin(), planned.end(), h) != planned.end())
      continue;
    const int64_t tokens = it.placement.num_placeholders();
    const bool fits = (unbounded || used == 0 || used + tokens <= encoder_budget_) &&
                      encoder_.can_allocate(fresh + tokens, pinned);
    if (!fits) {
      const int64_t cut = whole ? 0 : std::max<int64_t>(0, first_row(it) - computed);
      // Nothing else holds the cache and no shorter chunk helps: run over its capacity.
      const bool stuck = cut == 0 && used == 0 && !encoder_.any_referenced();
      if (!stuck) return cut;
    }
    used += tokens;
    fresh += tokens;
    planned.push_back(h);
  }
  return n;
}

void Scheduler::commit_encoder(const Request& r, int64_t computed, int64_t n,
                               SchedulerOutput& out) {
  if (!r.mm) return;
  const auto& items = r.mm->items;
  // Cached entries first, so that allocating the new ones cannot evict them.
  for (int pass = 0; pass < 2; ++pass)
    for (const MultimodalItem& it : items) {
      if (first_row(it) >= computed + n) break;
      if (!reads(it, computed, computed + n)) continue;
      const BlockHash h = it.hash();
      const bool cached = encoder_.cached(h);
      if (pass == 0 && cached) encoder_.acquire(r.id, h, false);
      if (pass == 1 && !cached) {
        const int64_t tokens = it.placement.num_placeholders();
        encoder_.allocate(h, tokens);
        encoder_used_ += tokens;
        out.encoder_inputs.push_back(it.input);
        encoder_.acquire(r.id, h, true);
      }
    }
  // An item whose last rows run now is done (a later item with the same hash acquires it
  // again, or encodes it again if it was evicted meanwhile).
  for (const MultimodalItem& it : items)
    if (reads(it, computed, computed + n) && last_row(it) <= computed + n)
      encoder_.release(r.id, it.hash());
}

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput out;
  out.finished_ids = std::move(finished_since_schedule_);
  finished_since_schedule_.clear();
  retired_.clear();

  kv_.begin_step();
  encoder_.begin_step();
  encoder_used_ = 0;
  int64_t budget = config_.max_num_batched_tokens;
  // Tokens to run for a request with `computed` tokens cached and `n` to go.
  auto cap = [&](const Request& r, int64_t computed, int64_t n) {
    if (config_.long_prefill_token_threshold > 0)
      n = std::min(n, config_.long_prefill_token_threshold);
    n = std::min(n, budget);
    // Hybrid prefix caching: where a chunk ends for its state snapshots.
    n = kv_.prefill_chunk(r, computed, n);
    // Vision items read in this chunk need their features this step.
    return plan_encoder(r, computed, n, !config_.enable_chunked_prefill);
  };

  // Running requests, oldest first.
  size_t i = 0;
  while (i < running_.size() && budget > 0) {
    Request* r = running_[i];
    const int64_t n = cap(*r, r->num_computed_tokens, r->num_tokens() - r->num_computed_tokens);
    VT_CHECK(r->num_tokens() > r->num_computed_tokens, "scheduler: running request '", r->id,
             "' has nothing to compute");
    if (n == 0) {  // its next vision item waits for encoder budget or cache room
      ++i;
      continue;
    }
    bool self_preempted = false;
    while (!kv_.allocate_slots(*r, n)) {
      Request* victim = pick_victim();
      const auto pos = std::find(running_.begin(), running_.end(), victim) - running_.begin();
      auto done = std::find_if(out.requests.begin(), out.requests.end(),
                               [&](const ScheduledRequest& s) { return s.request == victim; });
      if (done != out.requests.end()) {  // priority policy: a victim already scheduled this step
        budget += done->num_new_tokens;
        out.requests.erase(done);
      }
      preempt(victim);
      out.preempted_ids.push_back(victim->id);
      if (static_cast<size_t>(pos) < i) --i;
      if (victim == r) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted) continue;
    commit_encoder(*r, r->num_computed_tokens, n, out);
    ScheduledRequest s;
    s.request = r;
    s.kind = ScheduleKind::kRunning;
    s.num_computed_tokens = r->num_computed_tokens;
    s.num_new_tokens = n;
    out.requests.push_back(std::move(s));
    budget -= n;
    ++i;
  }

  // Waiting requests, only when nobody had to make room this step.
  while (out.preempted_ids.empty() && !waiting_.empty() && budget > 0 &&
         static_cast<int>(running_.size()) < config_.max_num_seqs) {
    const size_t w = next_waiting();
    Request* r = waiting_[w];
    PrefixHit hit;
    if (r->num_computed_tokens == 0) hit = kv_.get_computed_blocks(*r);
    const int64_t remaining = r->num_tokens() - r->num_computed_tokens - hit.num_tokens;
    if (!config_.enable_chunked_prefill && remaining > budget) break;
    const int64_t n = cap(*r, r->num_computed_tokens + hit.num_tokens, remaining);
    if (n == 0) break;  // its first vision item waits for encoder budget or cache room
    if (!kv_.allocate_slots(*r, n, hit)) break;
    commit_encoder(*r, r->num_computed_tokens + hit.num_tokens, n, out);
    waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(w));
    ScheduledRequest s;
    s.request = r;
    s.kind = r->status == RequestStatus::kPreempted ? ScheduleKind::kResumed : ScheduleKind::kNew;
    if (r->num_cached_tokens < 0) r->num_cached_tokens = hit.num_tokens;
    if (!r->first_scheduled) r->first_scheduled = std::chrono::steady_clock::now();
    r->num_computed_tokens += hit.num_tokens;
    r->status = RequestStatus::kRunning;
    running_.push_back(r);
    s.num_computed_tokens = r->num_computed_tokens;
    s.num_new_tokens = n;
    out.requests.push_back(std::move(s));
    budget -= n;
  }

  // Block lists are final now; advance the computed counts (the step will compute them).
  for (ScheduledRequest& s : out.requests) {
    Request* r = requests_.at(s.request->id).get();
    s.block_ids = kv_.block_ids(r->id);
    s.state_slot = kv_.state_slot(r->id);
    const int64_t bs = kv_.block_size();
    const int64_t had = (s.num_computed_tokens + bs - 1) / bs;
    const int64_t old_blocks = s.kind == ScheduleKind::kRunning ? had : 0;
    s.new_block_ids.assign(s.block_ids.begin() + std::min<int64_t>(old_blocks, s.block_ids.size()),
                           s.block_ids.end());
    r->num_computed_tokens += s.num_new_tokens;
    out.total_num_scheduled_tokens += s.num_new_tokens;
    if (auto c = kv_.take_state_copy_before(r->id)) out.state_copies_before.push_back(*c);
    s.state_save = kv_.snapshot_within(*r, s.num_computed_tokens, r->num_computed_tokens);
    if (auto c = kv_.snapshot_after(*r, r->num_computed_tokens))
      out.state_copies_after.push_back(*c);
  }
  out.encoder_frees = encoder_.freed();
  return out;
}

bool Scheduler::check_stop(Request& r) const {
  if (r.num_tokens() >= config_.max_model_len || r.num_output_tokens() >= r.params.max_tokens) {
    r.status = RequestStatus::kFinishedLength;
    return true;
  }
  if (r.num_output_tokens() < r.params.min_tokens) return false;
  const int32_t last = r.output_token_ids.back();
  if (!r.params.ignore_eos && contains(r.eos_token_ids, last)) {
    r.status = RequestStatus::kFinishedStopped;
    return true;
  }
  if (contains(r.params.stop_token_ids, last)) {
    r.status = RequestStatus::kFinishedStopped;
    r.stop_token = last;
    return true;
  }
  return false;
}

void Scheduler::finish(Request* r, RequestStatus status) {
  if (r->status == RequestStatus::kRunning)
    running_.erase(std::find(running_.begin(), running_.end(), r));
  else
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), r));
  kv_.free(r->id);
  encoder_.release_all(r->id);
  r->status = status;
  finished_since_schedule_.push_back(r->id);
  // Kept alive until the next schedule(): the last SchedulerOutput may point at it.
  auto it = requests_.find(r->id);
  retired_.push_back(std::move(it->second));
  requests_.erase(it);
}

bool Scheduler::finish_request(const std::string& id, RequestStatus status) {
  VT_CHECK(is_finished(status), "scheduler: finish_request('", id, "') with status ",
           to_string(status), ", expected a finished status");
  auto it = requests_.find(id);
  if (it == requests_.end()) return false;
  finish(it->second.get(), status);
  return true;
}

std::vector<RequestOutput> Scheduler::update_from_output(const SchedulerOutput& output,
                                                         const SampledTokens& sampled) {
  VT_CHECK(sampled.tokens.size() == output.requests.size(), "scheduler: ", sampled.tokens.size(),
           " sampled rows for ", output.requests.size(), " scheduled requests");
  std::vector<RequestOutput> outs;
  for (size_t i = 0; i < output.requests.size(); ++i) {
    // The same live object: not finished meanwhile, nor replaced by a new request with its id.
    auto it = requests_.find(output.requests[i].request->id);
    if (it == requests_.end() || it->second.get() != output.requests[i].request) continue;
    Request& r = *it->second;
    // Aborted since schedule(), or a chunk that did not reach the end (its sample is discarded).
    if (r.status != RequestStatus::kRunning || r.num_computed_tokens < r.num_tokens()) continue;
    RequestOutput o;
    o.id = r.id;
    o.index = i;
    o.num_prompt_tokens = r.num_prompt_tokens();
    o.num_cached_tokens = r.num_cached_tokens;
    o.first_scheduled = r.first_scheduled;
    append(r, sampled.tokens[i], o);
    outs.push_back(std::move(o));
  }
  return outs;
}

void Scheduler::append_outputs(RequestOutput& o, std::span<const int32_t> tokens) {
  auto it = requests_.find(o.id);
  VT_CHECK(it != requests_.end() && it->second->status == RequestStatus::kRunning && !o.finished,
           "scheduler: append_outputs to request '", o.id, "', which is not running");
  append(*it->second, tokens, o);
}

void Scheduler::append(Request& r, std::span<const int32_t> tokens, RequestOutput& o) {
  for (int32_t t : tokens) {
    r.append_output(t);
    o.new_token_ids.push_back(t);
    if (check_stop(r)) break;
  }
  if (r.finished()) {
    const RequestStatus st = r.status;
    r.status = RequestStatus::kRunning;  // finish() removes it from the running list
    finish(&r, st);
    o.finished = true;
    o.finish_reason = finish_reason_of(st);
    o.stop_token = r.stop_token;
  }
}

SchedulerStats Scheduler::stats() const {
  SchedulerStats s;
  s.num_waiting = static_cast<int>(waiting_.size());
  s.num_running = static_cast<int>(running_.size());
  s.num_preemptions = num_preemptions_;
  s.kv = kv_.stats();
  return s;
}

}  // namespace vtllm::engine
