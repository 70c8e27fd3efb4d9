// KvCacheManager: the cache of every kind a model needs, per request.
//
// Two kinds today: paged full-attention KV (a BlockPool of block_size-token
// blocks, with prefix caching) and, for hybrid models, GDN state slots (one
// per running request). The scheduler calls this one class and never asks
// which kinds exist.
//
// Prefix caching: full blocks are registered under chained hashes when they
// are scheduled; a new request reuses the longest chain of cached blocks,
// always leaving its last token to compute (its logits are needed). Hybrid
// models: a hit also needs the GDN state at that block boundary, so prefix
// caching is on only with num_state_snapshots > 0. The state is copied into a
// snapshot slot at: each prompt's last block boundary and every snapshot_stride
// tokens before it (from within the step that passes the point, or after a step
// the scheduler ends there: snapshot_within, prefill_chunk), and, after the
// steps that end there, past the prompt each block boundary a step ends on (a
// request keeps only its latest such "tail" snapshot, so a finished response
// leaves the state after its last full block; one that can end only at
// max_tokens takes just that one). A hit is cut back to the
// longest boundary with a snapshot, which is copied into the new request's
// slot before its step; the request then also snapshots where the cached block
// chain ended (where its prompt parts from the earlier one's), so a third
// request with that prefix hits all of it.
// Not thread-safe: the engine thread owns it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/block_pool.h"
#include "engine/request.h"
#include "engine/state_slot_manager.h"
#include "engine/state_snapshot_pool.h"

namespace vtllm::engine {

struct KvCacheConfig {
  int block_size = 16;
  int32_t num_blocks = 0;  // paged KV blocks, including the null block
  bool enable_prefix_caching = true;
  int32_t num_state_slots = 0;  // > 0: hybrid model with GDN state slots
  // Hybrid models: extra GDN state slots (ids after the running slots) for
  // prefix-cache snapshots; 0 turns prefix caching off for them.
  int32_t num_state_snapshots = 0;
  // Hybrid prefix caching: also snapshot every this many prompt tokens (a
  // multiple of block_size; 0: only at each prompt's last block boundary).
  int64_t snapshot_stride = 0;
  // CUDA cache planning (profile_and_plan): when > 0, this share of the memory left for
  // KV blocks and snapshots (after weights, activations, running slots and graphs) goes
  // to GDN state snapshots, added to num_state_snapshots; at least one.
  double snapshot_fraction = 0;
  // Hybrid prefix caching: a snapshot due inside a prefill chunk is taken from within the
  // step (models::ForwardBatch::state_saves) when at most this many of the chunk's tokens
  // follow its point (GDN layers run those tokens twice); otherwise the chunk ends at the
  // point. 0: chunks always end at their points.
  int64_t max_save_tail = 64;
};

// Copy every GDN layer's state from slot src to slot dst.
struct StateCopy {
  int32_t src = 0;
  int32_t dst = 0;
  friend bool operator==(const StateCopy&, const StateCopy&) = default;
};

// A snapshot taken inside a step: the GDN state after the step's first `offset` tokens
// of the request goes to slot `slot` too.
struct StateSaveInStep {
  int64_t offset = 0;
  int32_t slot = 0;
};

// A prefix-cache hit: cached blocks to reuse and the tokens they cover.
struct PrefixHit {
  std::vector<int32_t> blocks;
  int64_t num_tokens = 0;
  std::optional<int32_t> state_snapshot;  // hybrid: the GDN state at num_tokens
  // Hybrid: the tokens of the cached block chain before the cut back to a snapshot
  // (>= num_tokens). The request snapshots there, so the next sharer hits it all.
  int64_t num_shared_tokens = 0;
};

struct KvCacheStats {
  int32_t num_blocks = 0;  // usable blocks (null block excluded)
  int32_t num_free_blocks = 0;
  int32_t num_cached_blocks = 0;
  int32_t num_state_slots = 0;
  int32_t num_free_state_slots = 0;
  int32_t num_state_snapshots = 0;  // held (valid or being written)
  int64_t prefix_queries = 0;  // tokens of admitted requests (prompt + output after preemption)
  int64_t prefix_hits = 0;     // of which were found cached
  double usage = 0;
};

class KvCacheManager {
 public:
  explicit KvCacheManager(const KvCacheConfig& config);

  int block_size() const { return pool_.block_size(); }
  bool prefix_caching() const { return prefix_caching_; }
  bool hybrid() const { return states_.has_value(); }

  // The longest usable prefix hit for a request with no computed tokens yet; none for a
  // request with params.prompt_logprobs (vLLM skips the lookup for those).
  // Takes no reference: pass the result to allocate_slots in the same step.
  PrefixHit get_computed_blocks(const Request& request);

  // Makes room for request.num_computed_tokens + hit.num_tokens + num_new_tokens
  // tokens: takes references on the hit blocks, allocates new blocks and, for a
  // hybrid model, a state slot; registers the full blocks that will then be
  // computed in the prefix cache. Returns false and changes nothing when the
  // blocks or slots are not there.
  bool allocate_slots(Request& request, int64_t num_new_tokens, const PrefixHit& hit = {});

  // Returns every block and slot of the request (finish, abort, preemption).
  void free(const std::string& request_id);

  // Hybrid snapshots. begin_step(): the previous step ran, its snapshots are
  // valid. prefill_boundary(): the request's last prompt block boundary (0: no
  // snapshots). A prefill chunk [computed, computed + n) snapshots at one point it
  // passes: where the request's last get_computed_blocks() found the cached chain to
  // end, else the prompt boundary, else the furthest stride multiple.
  // prefill_chunk(): `n` cut back so the chunk ends at that point, unless at most
  // max_save_tail tokens of the chunk follow it (then uncut, or, when the chunk also
  // passes the boundary after the chain's end, ending at the boundary).
  // snapshot_within(): the save inside a step of tokens [begin, end) when its point lies
  // before `end`. take_state_copy_before(): the snapshot to restore into
  // the request's slot before its first step after a hit. snapshot_after(): the copy
  // that saves the request's state when its step ends at a snapshot point or, past
  // the boundary, at any block boundary (dropping its previous tail snapshot).
  void begin_step();
  int64_t prefill_boundary(const Request& request) const;
  int64_t prefill_chunk(const Request& request, int64_t computed, int64_t n) const;
  std::optional<StateSaveInStep> snapshot_within(const Request& request, int64_t begin,
                                                 int64_t end);
  std::optional<StateCopy> take_state_copy_before(const std::string& request_id);
  std::optional<StateCopy> snapshot_after(const Request& request, int64_t num_tokens_after_step);

  std::span<const int32_t> block_ids(const std::string& request_id) const;
  std::optional<int32_t> state_slot(const std::string& request_id) const;
  int32_t num_requests() const { return static_cast<int32_t>(reqs_.size()); }
  KvCacheStats stats() const;
  const BlockPool& pool() const { return pool_; }
  bool reset_prefix_cache();

 private:
  struct ReqCache {
    std::vector<int32_t> blocks;
    std::vector<BlockHash> hashes;     // of the request's full blocks (computed or not)
    int64_t num_cached_blocks = 0;     // leading blocks registered in the pool
    std::optional<StateCopy> restore;  // snapshot -> slot, before the next step
    std::optional<BlockHash> tail;     // its latest snapshot past the prompt boundary
  };

  void cache_full_blocks(const Request& request, ReqCache& rc, int64_t num_tokens);
  // The snapshot points a prefill chunk (computed, end] passes, ascending: the
  // chain's end and the boundary, or else the furthest stride multiple.
  std::vector<int64_t> chunk_points(const Request& request, int64_t computed, int64_t end) const;
  // A snapshot slot for the request's state after p tokens (a block multiple), tail:
  // past the prompt boundary; nullopt when it exists already or none is free.
  std::optional<int32_t> reserve_snapshot(const Request& request, int64_t p, bool tail);
  // Whether a step ending at p (a block multiple, <= the prompt boundary) snapshots.
  bool snapshot_point(const Request& request, int64_t p) const;
  // Past the prompt boundary: a request that can end only at max_tokens snapshots once,
  // at the last block boundary it computes; any other at every boundary (its end is
  // not known in advance).
  bool tail_due(const Request& request, int64_t p) const;

  BlockPool pool_;
  std::optional<StateSlotManager> states_;
  std::optional<StateSnapshotPool> snapshots_;
  bool prefix_caching_;
  int64_t snapshot_stride_;
  int64_t max_save_tail_;
  std::unordered_map<std::string, ReqCache> reqs_;
  // Hybrid: PrefixHit::num_shared_tokens of each request's last lookup, where it
  // is longer than the hit (a snapshot point for that request).
  std::unordered_map<std::string, int64_t> share_points_;
  int64_t prefix_queries_ = 0, prefix_hits_ = 0;
};

}  // namespace vtllm::engine
