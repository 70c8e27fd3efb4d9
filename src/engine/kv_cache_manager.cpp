#include "engine/kv_cache_manager.h"

#include <algorithm>
#include <utility>

#include "base/error.h"

namespace vtllm::engine {
namespace {

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::span<const int32_t> block_tokens(const Request& r, int64_t block, int bs) {
  return std::span<const int32_t>(r.all_token_ids).subspan(block * bs, bs);
}

}  // namespace

namespace {
bool caching_on(const KvCacheConfig& c) {
  return c.enable_prefix_caching && (c.num_state_slots == 0 || c.num_state_snapshots > 0);
}
}  // namespace

KvCacheManager::KvCacheManager(const KvCacheConfig& config)
    : pool_(config.num_blocks, config.block_size, caching_on(config)),
      prefix_caching_(caching_on(config)),
      snapshot_stride_(config.snapshot_stride),
      max_save_tail_(config.max_save_tail) {
  VT_CHECK(config.num_state_snapshots >= 0,
           "kv cache: num_state_snapshots = ", config.num_state_snapshots);
  VT_CHECK(config.snapshot_stride >= 0 && config.snapshot_stride % config.block_size == 0,
           "kv cache: snapshot_stride = ", config.snapshot_stride,
           ", expected a non-negative multiple of the block size ", config.block_size);
  if (config.num_state_slots > 0) {
    states_.emplace(config.num_state_slots);
    if (prefix_caching_) snapshots_.emplace(config.num_state_slots, config.num_state_snapshots);
  }
}

PrefixHit KvCacheManager::get_computed_blocks(const Request& request) {
  PrefixHit hit;
  // A request asking for prompt logprobs computes its whole prompt (as vLLM).
  if (!prefix_caching_ || request.num_computed_tokens > 0 || request.params.prompt_logprobs)
    return hit;
  const int bs = block_size();
  std::vector<BlockHash> hashes;
  extend_block_hashes(request.all_token_ids, bs, request.extra_keys, request.cache_salt, hashes);
  // The last token is always recomputed: its logits are what the step is for.
  const int64_t max_blocks = (request.num_tokens() - 1) / bs;
  for (int64_t b = 0; b < max_blocks; ++b) {
    const BlockHash& parent = b == 0 ? kRootBlockHash : hashes[b - 1];
    const auto keys =
        extra_keys_for_block(b * bs, (b + 1) * bs, request.extra_keys, request.cache_salt);
    auto found = pool_.lookup(hashes[b], parent, block_tokens(request, b, bs), keys);
    if (!found) break;
    hit.blocks.push_back(*found);
  }
  if (snapshots_) {
    hit.num_shared_tokens = static_cast<int64_t>(hit.blocks.size()) * bs;
    // Cut back to the longest boundary whose GDN state was saved.
    while (!hit.blocks.empty()) {
      hit.state_snapshot = snapshots_->lookup(hashes[hit.blocks.size() - 1]);
      if (hit.state_snapshot) break;
      hit.blocks.pop_back();
    }
  }
  hit.num_tokens = static_cast<int64_t>(hit.blocks.size()) * bs;
  if (hit.num_shared_tokens > hit.num_tokens)
    share_points_[request.id] = hit.num_shared_tokens;
  else
    share_points_.erase(request.id);
  return hit;
}

bool KvCacheManager::allocate_slots(Request& request, int64_t num_new_tokens,
                                    const PrefixHit& hit) {
  VT_CHECK(num_new_tokens >= 0, "kv cache: request '", request.id, "' asks for ", num_new_tokens,
           " new tokens");
  const int bs = block_size();
  auto it = reqs_.find(request.id);
  const size_t have = it == reqs_.end() ? 0 : it->second.blocks.size();
  VT_CHECK(hit.blocks.empty() || have == 0, "kv cache: request '", request.id,
           "' got a prefix hit while already holding blocks");
  const int64_t total = request.num_computed_tokens + hit.num_tokens + num_new_tokens;
  VT_CHECK(total <= request.num_tokens(), "kv cache: request '", request.id, "' asks for ", total,
           " tokens but has only ", request.num_tokens());
  const int64_t need = cdiv(total, bs) - static_cast<int64_t>(have + hit.blocks.size());
  const int64_t to_allocate = std::max<int64_t>(0, need);
  // Hit blocks with no reference sit in the free queue; touching takes them out.
  const int64_t free_hits =
      std::ranges::count_if(hit.blocks, [&](int32_t b) { return pool_.ref_count(b) == 0; });
  if (to_allocate + free_hits > pool_.num_free()) return false;
  if (states_ && !states_->slot_of(request.id) && states_->num_free() == 0) return false;

  if (prefix_caching_ && have == 0 && request.num_computed_tokens == 0) {
    // Counted once per admission (a request that waits is looked up again next step).
    prefix_queries_ += request.num_tokens();
    prefix_hits_ += hit.num_tokens;
  }
  ReqCache& rc = reqs_[request.id];
  if (states_) states_->ensure(request.id);
  if (hit.state_snapshot)
    rc.restore = StateCopy{*hit.state_snapshot, *states_->slot_of(request.id)};
  pool_.touch(hit.blocks);
  rc.blocks.insert(rc.blocks.end(), hit.blocks.begin(), hit.blocks.end());
  rc.num_cached_blocks = std::max<int64_t>(rc.num_cached_blocks, hit.blocks.size());
  const auto fresh = pool_.allocate(static_cast<int32_t>(to_allocate));
  rc.blocks.insert(rc.blocks.end(), fresh.begin(), fresh.end());
  cache_full_blocks(request, rc, total);
  return true;
}

void KvCacheManager::cache_full_blocks(const Request& request, ReqCache& rc, int64_t num_tokens) {
  if (!prefix_caching_) return;
  const int bs = block_size();
  const int64_t full = num_tokens / bs;
  if (full <= rc.num_cached_blocks) return;
  extend_block_hashes(std::span<const int32_t>(request.all_token_ids).first(full * bs), bs,
                      request.extra_keys, request.cache_salt, rc.hashes);
  for (int64_t b = rc.num_cached_blocks; b < full; ++b) {
    const BlockHash& parent = b == 0 ? kRootBlockHash : rc.hashes[b - 1];
    const auto keys =
        extra_keys_for_block(b * bs, (b + 1) * bs, request.extra_keys, request.cache_salt);
    pool_.cache(rc.blocks[b], rc.hashes[b], parent, block_tokens(request, b, bs), keys);
  }
  rc.num_cached_blocks = full;
}

void KvCacheManager::free(const std::string& request_id) {
  if (states_) states_->free(request_id);
  share_points_.erase(request_id);
  auto it = reqs_.find(request_id);
  if (it == reqs_.end()) return;
  // Tail first, so a request's last blocks are evicted before its shared prefix.
  std::vector<int32_t> reversed(it->second.blocks.rbegin(), it->second.blocks.rend());
  pool_.free(reversed);
  reqs_.erase(it);
}

void KvCacheManager::begin_step() {
  if (snapshots_) snapshots_->begin_step();
}

int64_t KvCacheManager::prefill_boundary(const Request& request) const {
  if (!snapshots_) return 0;
  // The longest prefix a later request with this prompt can hit (its last token is recomputed).
  return (request.num_prompt_tokens() - 1) / block_size() * block_size();
}

std::vector<int64_t> KvCacheManager::chunk_points(const Request& request, int64_t computed,
                                                  int64_t end) const {
  const int64_t boundary = prefill_boundary(request);
  std::vector<int64_t> points;
  const auto passed = [&](int64_t p) { return p > computed && p <= end; };
  // Where the cached chain ended comes first: the next request with that prefix needs it.
  if (auto it = share_points_.find(request.id); it != share_points_.end() && passed(it->second))
    points.push_back(it->second);
  if (passed(boundary) && (points.empty() || points[0] != boundary)) points.push_back(boundary);
  if (points.empty() && snapshot_stride_ > 0) {
    // The furthest stride multiple in (computed, end] (none past the boundary).
    const int64_t point = std::min(end, boundary) / snapshot_stride_ * snapshot_stride_;
    if (passed(point)) points.push_back(point);
  }
  std::sort(points.begin(), points.end());
  return points;
}

int64_t KvCacheManager::prefill_chunk(const Request& request, int64_t computed, int64_t n) const {
  const int64_t boundary = prefill_boundary(request);
  if (computed >= boundary || n <= 0) return n;
  const std::vector<int64_t> points = chunk_points(request, computed, computed + n);
  if (points.empty()) return n;
  // One save inside a step, at the first point, when its tail is short: a chunk passing
  // two points ends at the later one.
  const int64_t end = points.size() > 1 ? points.back() : computed + n;
  return end - points.front() <= max_save_tail_ ? end - computed : points.front() - computed;
}

std::optional<StateSaveInStep> KvCacheManager::snapshot_within(const Request& request,
                                                               int64_t begin, int64_t end) {
  if (max_save_tail_ <= 0 || !snapshots_ || begin >= prefill_boundary(request)) return std::nullopt;
  const std::vector<int64_t> points = chunk_points(request, begin, end);
  if (points.empty() || points.front() >= end) return std::nullopt;  // snapshot_after's
  const int64_t p = points.front();
  const auto slot = reserve_snapshot(request, p, false);
  if (!slot) return std::nullopt;
  return StateSaveInStep{p - begin, *slot};
}

bool KvCacheManager::tail_due(const Request& request, int64_t p) const {
  const SamplingParams& sp = request.params;
  const bool length_only = (sp.ignore_eos || request.eos_token_ids.empty()) &&
                           sp.stop_token_ids.empty() && sp.stop.empty();
  if (!length_only) return true;
  // It ends at max_tokens, with all but its last sampled token computed.
  const int64_t last = request.num_prompt_tokens() + sp.max_tokens - 1;
  return p == last / block_size() * block_size();
}

bool KvCacheManager::snapshot_point(const Request& request, int64_t p) const {
  if (p == prefill_boundary(request)) return true;
  if (snapshot_stride_ > 0 && p % snapshot_stride_ == 0) return true;
  auto it = share_points_.find(request.id);
  return it != share_points_.end() && it->second == p;
}

std::optional<StateCopy> KvCacheManager::take_state_copy_before(const std::string& request_id) {
  auto it = reqs_.find(request_id);
  if (it == reqs_.end()) return std::nullopt;
  return std::exchange(it->second.restore, std::nullopt);
}

std::optional<StateCopy> KvCacheManager::snapshot_after(const Request& request,
                                                        int64_t num_tokens_after_step) {
  const int64_t boundary = prefill_boundary(request);
  const int64_t p = num_tokens_after_step;
  if (boundary == 0 || p <= 0 || p % block_size() != 0) return std::nullopt;
  const bool tail = p > boundary;
  if (tail ? !tail_due(request, p) : !snapshot_point(request, p)) return std::nullopt;
  const auto slot = reserve_snapshot(request, p, tail);
  if (!slot) return std::nullopt;
  return StateCopy{*states_->slot_of(request.id), *slot};
}

std::optional<int32_t> KvCacheManager::reserve_snapshot(const Request& request, int64_t p,
                                                        bool tail) {
  auto it = reqs_.find(request.id);
  VT_CHECK(it != reqs_.end() && states_->slot_of(request.id), "kv cache: request '", request.id,
           "' has no state slot to snapshot");
  ReqCache& rc = it->second;
  const int bs = block_size();
  const int64_t block = p / bs - 1;
  VT_CHECK(static_cast<int64_t>(rc.hashes.size()) > block, "kv cache: request '", request.id,
           "' has no hash for block ", block);
  const BlockHash& hash = rc.hashes[block];
  if (tail && rc.tail) {
    snapshots_->release(*rc.tail);
    rc.tail.reset();
  }
  // The block that holds this hash in the prefix cache (another request's when this
  // request's copy was a duplicate): the snapshot is stale once it loses the hash.
  const BlockHash& parent = block == 0 ? kRootBlockHash : rc.hashes[block - 1];
  const auto keys =
      extra_keys_for_block(block * bs, (block + 1) * bs, request.extra_keys, request.cache_salt);
  const int32_t holder =
      pool_.lookup(hash, parent, block_tokens(request, block, bs), keys).value_or(rc.blocks[block]);
  const auto slot = snapshots_->reserve(
      hash, holder, [this](const BlockHash& h, int32_t b) { return pool_.hash_of(b) != h; });
  if (slot && tail) rc.tail = hash;
  return slot;
}

bool KvCacheManager::reset_prefix_cache() {
  if (!pool_.reset_prefix_cache()) return false;
  if (snapshots_) snapshots_->clear();
  return true;
}

std::span<const int32_t> KvCacheManager::block_ids(const std::string& request_id) const {
  auto it = reqs_.find(request_id);
  if (it == reqs_.end()) return {};
  return it->second.blocks;
}

std::optional<int32_t> KvCacheManager::state_slot(const std::string& request_id) const {
  if (!states_) return std::nullopt;
  return states_->slot_of(request_id);
}

KvCacheStats KvCacheManager::stats() const {
  KvCacheStats s;
  s.num_blocks = pool_.num_blocks() - 1;
  s.num_free_blocks = pool_.num_free();
  s.num_cached_blocks = pool_.num_cached();
  s.num_state_slots = states_ ? states_->num_slots() : 0;
  s.num_free_state_slots = states_ ? states_->num_free() : 0;
  s.num_state_snapshots = snapshots_ ? snapshots_->size() : 0;
  s.prefix_queries = prefix_queries_;
  s.prefix_hits = prefix_hits_;
  s.usage = pool_.usage();
  return s;
}

}  // namespace vtllm::engine
