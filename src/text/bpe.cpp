#include "text/bpe.h"

#include <array>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <queue>
#include <unordered_map>

#include "base/error.h"
#include "text/utf8.h"

namespace vtllm::text {

namespace {

// Ids live in a vector indexed by id; a file may leave gaps but not absurd ones.
constexpr int64_t kMaxId = (int64_t{1} << 31) - 1;
constexpr size_t kCacheShards = 64;
constexpr size_t kCacheCapacity = 10000 * 8;  // words, over all shards
constexpr size_t kMaxCachedWordLen = 256;      // bytes, as HF's MAX_LENGTH

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct MergeInfo {
  uint32_t rank;
  TokenId new_id;
};

uint64_t pair_key(TokenId a, TokenId b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

struct Symbol {
  TokenId c;
  int32_t prev, next;
  uint32_t len;
};

struct QueuedMerge {
  uint32_t rank;
  uint32_t pos;
  TokenId new_id;
  // std::priority_queue pops the largest: make (rank, pos) smallest the largest.
  bool operator<(const QueuedMerge& o) const {
    return rank != o.rank ? rank > o.rank : pos > o.pos;
  }
};

}  // namespace

struct Bpe::Impl {
  std::unordered_map<std::string, TokenId, StringHash, std::equal_to<>> vocab;
  std::vector<std::string> vocab_r;
  std::vector<bool> has_id;
  std::unordered_map<uint64_t, MergeInfo> merges;
  std::optional<std::string> unk_token;
  std::optional<TokenId> unk_id;
  std::string prefix, suffix;  // continuing_subword_prefix, end_of_word_suffix
  bool has_prefix = false, has_suffix = false;
  bool fuse_unk = false, byte_fallback = false, ignore_merges = false;
  std::array<TokenId, 256> byte_ids{};  // -1 where "<0xAB>" is not in the vocabulary

  struct Shard {
    std::mutex mu;
    std::unordered_map<std::string, std::vector<TokenId>, StringHash, std::equal_to<>> map;
  };
  mutable std::array<Shard, kCacheShards> cache;

  const MergeInfo* find_merge(TokenId a, TokenId b) const {
    auto it = merges.find(pair_key(a, b));
    return it == merges.end() ? nullptr : &it->second;
  }

  void merge_word(std::string_view w, std::vector<TokenId>& out) const;
};

Bpe::Bpe(const Json& model, const JsonPath& at) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  json_object(model, at);
  const std::string type = json_string_or(model, "type", "BPE", at);
  if (type != "BPE") VT_THROW(at.key("type").str(), ": expected 'BPE', got '", type, "'");
  if (const Json* d = json_optional(model, "dropout", at)) {
    if (!d->is_number()) VT_THROW(at.key("dropout").str(), ": expected a number or null");
    if (d->get<double>() != 0.0)
      VT_THROW(at.key("dropout").str(), ": BPE dropout is not supported (it makes encoding random)");
  }
  if (const Json* u = json_optional(model, "unk_token", at))
    m.unk_token = json_string(*u, at.key("unk_token"));
  if (const Json* p = json_optional(model, "continuing_subword_prefix", at)) {
    m.prefix = json_string(*p, at.key("continuing_subword_prefix"));
    m.has_prefix = true;
  }
  if (const Json* s = json_optional(model, "end_of_word_suffix", at)) {
    m.suffix = json_string(*s, at.key("end_of_word_suffix"));
    m.has_suffix = true;
  }
  m.fuse_unk = json_bool_or(model, "fuse_unk", false, at);
  m.byte_fallback = json_bool_or(model, "byte_fallback", false, at);
  m.ignore_merges = json_bool_or(model, "ignore_merges", false, at);

  const JsonPath vocab_at = at.key("vocab");
  const Json& vocab = json_object(json_member(model, "vocab", at), vocab_at);
  int64_t max_id = -1;
  m.vocab.reserve(vocab.size());
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const JsonPath entry_at = vocab_at.key("\"" + it.key() + "\"");
    const int64_t id = json_int(it.value(), 0, kMaxId, entry_at);
    max_id = std::max(max_id, id);
    m.vocab.emplace(it.key(), static_cast<TokenId>(id));
  }
  // A sparse vocabulary is allowed, an absurd one is not (it would cost memory per id).
  const int64_t limit = 2 * static_cast<int64_t>(m.vocab.size()) + (int64_t{1} << 20);
  if (max_id >= limit)
    VT_THROW(vocab_at.str(), ": id ", max_id, " is far beyond the ", m.vocab.size(),
             " entries (at most ", limit - 1, " accepted)");
  m.vocab_r.resize(static_cast<size_t>(max_id + 1));
  m.has_id.assign(static_cast<size_t>(max_id + 1), false);
  for (const auto& [token, id] : m.vocab) {
    if (m.has_id[id])
      VT_THROW(vocab_at.str(), ": id ", id, " is given to both '", m.vocab_r[id], "' and '", token,
               "'");
    m.has_id[id] = true;
    m.vocab_r[id] = token;
  }

  const JsonPath merges_at = at.key("merges");
  const Json& merges = json_array(json_member(model, "merges", at), merges_at);
  m.merges.reserve(merges.size());
  const size_t prefix_len = m.has_prefix ? m.prefix.size() : 0;
  uint32_t rank = 0;
  for (size_t i = 0; i < merges.size(); ++i) {
    const JsonPath merge_at = merges_at.index(i);
    std::string a, b;
    const Json& e = merges[i];
    if (e.is_string()) {
      const std::string line = e.get<std::string>();
      if (line.rfind("#version", 0) == 0) continue;  // HF skips a legacy header line
      const size_t sp = line.find(' ');
      if (sp == std::string::npos || line.find(' ', sp + 1) != std::string::npos)
        VT_THROW(merge_at.str(), ": expected \"A B\" (two tokens, one space), got \"", line, "\"");
      a = line.substr(0, sp);
      b = line.substr(sp + 1);
    } else if (e.is_array() && e.size() == 2) {
      a = json_string(e[0], merge_at.index(0));
      b = json_string(e[1], merge_at.index(1));
    } else {
      VT_THROW(merge_at.str(), ": expected \"A B\" or [\"A\", \"B\"]");
    }
    const auto find = [&](const std::string& t) {
      auto it = m.vocab.find(t);
      if (it == m.vocab.end())
        VT_THROW(merge_at.str(), ": merge of '", a, "' and '", b, "' needs '", t,
                 "', which is not in the vocabulary");
      return it->second;
    };
    if (b.size() < prefix_len)
      VT_THROW(merge_at.str(), ": '", b, "' is shorter than the continuing_subword_prefix");
    const TokenId a_id = find(a), b_id = find(b);
    const TokenId new_id = find(a + b.substr(prefix_len));
    // A repeated pair keeps its last rank, as HF's map collect does.
    m.merges[pair_key(a_id, b_id)] = MergeInfo{rank, new_id};
    ++rank;
  }

  if (m.unk_token) {
    auto it = m.vocab.find(*m.unk_token);
    if (it == m.vocab.end())
      VT_THROW(at.key("unk_token").str(), ": '", *m.unk_token, "' is not in the vocabulary");
    m.unk_id = it->second;
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    auto it = m.vocab.find(std::string_view(name));
    m.byte_ids[b] = it == m.vocab.end() ? -1 : it->second;
  }
}

Bpe::~Bpe() = default;

void Bpe::Impl::merge_word(std::string_view w, std::vector<TokenId>& out) const {
  std::vector<Symbol> symbols;
  symbols.reserve(w.size());
  auto add = [&](TokenId id, uint32_t len) {
    const int32_t n = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, n - 1, -1, len});
    if (n > 0) symbols[n - 1].next = n;
  };
  // A pending unknown-token run (HF's `unk`): id and byte length, or unk_len == 0.
  TokenId unk_tok = -1;
  uint32_t unk_len = 0;
  std::string buf;
  for (size_t i = 0; i < w.size();) {
    size_t len = 0;
    utf8_decode(w, i, &len);
    const bool is_first = i == 0, is_last = i + len >= w.size();
    std::string_view s = w.substr(i, len);
    if ((!is_first && has_prefix) || (is_last && has_suffix)) {
      buf.clear();
      if (!is_first && has_prefix) buf.append(prefix);
      buf.append(s);
      if (is_last && has_suffix) buf.append(suffix);
      s = buf;
    }
    const uint32_t byte_len = static_cast<uint32_t>(len);
    i += len;
    if (auto it = vocab.find(s); it != vocab.end()) {
      if (unk_len) {
        add(unk_tok, unk_len);
        unk_len = 0;
      }
      add(it->second, byte_len);
      continue;
    }
    if (byte_fallback) {
      bool all = true;
      for (unsigned char c : s) all = all && byte_ids[c] >= 0;
      if (all) {
        for (unsigned char c : s) add(byte_ids[c], 1);
        continue;
      }
    }
    if (unk_id) {
      if (unk_len && fuse_unk) {
        unk_len += byte_len;
      } else {
        if (unk_len) add(unk_tok, unk_len);
        unk_tok = *unk_id;
        unk_len = byte_len;
      }
    }
  }
  if (unk_len) add(unk_tok, unk_len);

  std::priority_queue<QueuedMerge> queue;
  for (size_t k = 0; k + 1 < symbols.size(); ++k) {
    if (const MergeInfo* mi = find_merge(symbols[k].c, symbols[k + 1].c))
      queue.push({mi->rank, static_cast<uint32_t>(k), mi->new_id});
  }
  while (!queue.empty()) {
    const QueuedMerge top = queue.top();
    queue.pop();
    Symbol& cur = symbols[top.pos];
    if (cur.len == 0 || cur.next == -1) continue;
    const Symbol right = symbols[cur.next];
    const MergeInfo* target = find_merge(cur.c, right.c);
    if (!target || target->new_id != top.new_id) continue;  // stale entry
    symbols[cur.next].len = 0;
    cur.c = top.new_id;
    cur.len += right.len;
    cur.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = static_cast<int32_t>(top.pos);
    if (cur.prev >= 0) {
      if (const MergeInfo* mi = find_merge(symbols[cur.prev].c, cur.c))
        queue.push({mi->rank, static_cast<uint32_t>(cur.prev), mi->new_id});
    }
    if (cur.next >= 0) {
      if (const MergeInfo* mi = find_merge(cur.c, symbols[cur.next].c))
        queue.push({mi->rank, top.pos, mi->new_id});
    }
  }
  for (const Symbol& s : symbols)
    if (s.len != 0) out.push_back(s.c);
}

void Bpe::tokenize(std::string_view word, std::vector<TokenId>& out) const {
  const Impl& m = *impl_;
  if (word.empty()) return;
  if (m.ignore_merges) {
    if (auto it = m.vocab.find(word); it != m.vocab.end()) {
      out.push_back(it->second);
      return;
    }
  }
  const bool cacheable = word.size() < kMaxCachedWordLen;
  Impl::Shard* shard = nullptr;
  if (cacheable) {
    shard = &m.cache[StringHash{}(word) % kCacheShards];
    std::lock_guard<std::mutex> lock(shard->mu);
    if (auto it = shard->map.find(word); it != shard->map.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t first = out.size();
  m.merge_word(word, out);
  if (shard) {
    std::lock_guard<std::mutex> lock(shard->mu);
    if (shard->map.size() < kCacheCapacity / kCacheShards)
      shard->map.emplace(std::string(word), std::vector<TokenId>(out.begin() + first, out.end()));
  }
}

std::optional<TokenId> Bpe::token_to_id(std::string_view token) const {
  auto it = impl_->vocab.find(token);
  if (it == impl_->vocab.end()) return std::nullopt;
  return it->second;
}

const std::string* Bpe::id_to_token(TokenId id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->vocab_r.size() || !impl_->has_id[id])
    return nullptr;
  return &impl_->vocab_r[id];
}

size_t Bpe::size() const { return impl_->vocab.size(); }
size_t Bpe::id_end() const { return impl_->vocab_r.size(); }

}  // namespace vtllm::text
