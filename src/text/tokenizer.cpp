#include "text/tokenizer.h"

#include <atomic>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/error.h"
#include "base/file.h"
#include "text/decoder.h"
#include "text/normalizer.h"
#include "text/post_processor.h"
#include "text/pre_tokenizer.h"
#include "text/utf8.h"

namespace vtllm::text {

struct Tokenizer::Impl {
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  std::unique_ptr<Bpe> model;
  std::unique_ptr<PostProcessor> post_processor;
  std::unique_ptr<Decoder> decoder;
  std::unique_ptr<AddedVocabulary> added;
  std::vector<bool> special_by_id;
  bool byte_fallback_decoder = false;
  size_t id_end = 0;
  TokenizerConfig config;

  void encode_text(std::string_view text, std::vector<TokenId>& out) const;
};

namespace {

bool has_component(const Json& j, std::string_view type) {
  if (j.is_object()) {
    auto t = j.find("type");
    if (t != j.end() && t->is_string() && t->get<std::string>() == type) return true;
  }
  if (j.is_object() || j.is_array()) {
    for (const Json& child : j)
      if (has_component(child, type)) return true;
  }
  return false;
}

AddedToken parse_added_token(const Json& j, const JsonPath& at) {
  AddedToken t;
  t.content = json_string(json_member(j, "content", at), at.key("content"));
  json_int(json_member(j, "id", at), 0, (int64_t{1} << 31) - 1, at.key("id"));
  t.special = json_bool_or(j, "special", false, at);
  t.single_word = json_bool_or(j, "single_word", false, at);
  t.lstrip = json_bool_or(j, "lstrip", false, at);
  t.rstrip = json_bool_or(j, "rstrip", false, at);
  t.normalized = json_bool_or(j, "normalized", !t.special, at);
  return t;
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

Tokenizer Tokenizer::from_json(std::string_view json_text, std::string_view origin) {
  const Json j = json_parse(json_text, origin);
  const JsonPath root{std::string(origin)};
  json_object(j, root);
  auto impl = std::make_unique<Impl>();
  if (const Json* v = json_optional(j, "version", root)) {
    const std::string version = json_string(*v, root.key("version"));
    if (version != "1.0") VT_THROW(root.key("version").str(), ": unknown version '", version, "'");
  }
  if (json_optional(j, "truncation", root))
    VT_THROW(root.key("truncation").str(), ": truncation is not supported (it must be null)");
  if (json_optional(j, "padding", root))
    VT_THROW(root.key("padding").str(), ": padding is not supported (it must be null)");
  if (const Json* n = json_optional(j, "normalizer", root))
    impl->normalizer = make_normalizer(*n, root.key("normalizer"));
  if (const Json* p = json_optional(j, "pre_tokenizer", root))
    impl->pre_tokenizer = make_pre_tokenizer(*p, root.key("pre_tokenizer"));
  const JsonPath model_at = root.key("model");
  const Json& model = json_member(j, "model", root);
  const std::string model_type = json_string_or(model, "type", "BPE", model_at);
  if (model_type != "BPE")
    VT_THROW(model_at.key("type").str(), ": unsupported model type '", model_type, "'");
  impl->model = std::make_unique<Bpe>(model, model_at);
  if (const Json* p = json_optional(j, "post_processor", root))
    impl->post_processor = make_post_processor(*p, root.key("post_processor"));
  if (const Json* d = json_optional(j, "decoder", root)) {
    impl->decoder = make_decoder(*d, root.key("decoder"));
    impl->byte_fallback_decoder = has_component(*d, "ByteFallback");
  }

  std::vector<AddedToken> added;
  if (const Json* a = json_optional(j, "added_tokens", root)) {
    const JsonPath a_at = root.key("added_tokens");
    json_array(*a, a_at);
    for (size_t i = 0; i < a->size(); ++i) added.push_back(parse_added_token((*a)[i], a_at.index(i)));
  }
  impl->added =
      std::make_unique<AddedVocabulary>(std::move(added), *impl->model, impl->normalizer.get());

  impl->id_end = impl->model->id_end();
  for (const AddedToken& t : impl->added->tokens())
    impl->id_end = std::max(impl->id_end, static_cast<size_t>(t.id) + 1);
  // HF skips a token when its *string* is a special token's content.
  impl->special_by_id.assign(impl->id_end, false);
  for (size_t id = 0; id < impl->id_end; ++id) {
    const AddedToken* t = impl->added->find_id(static_cast<TokenId>(id));
    const std::string* s = t ? &t->content : impl->model->id_to_token(static_cast<TokenId>(id));
    if (s && impl->added->is_special_content(*s)) impl->special_by_id[id] = true;
  }
  return Tokenizer(std::move(impl));
}

Tokenizer Tokenizer::from_file(const std::string& path) { return from_json(read_file(path), path); }

Tokenizer Tokenizer::from_dir(const std::string& dir) {
  Tokenizer tok = from_file(dir + "/tokenizer.json");
  const std::string cfg_path = dir + "/tokenizer_config.json";
  if (!std::ifstream(cfg_path).good()) return tok;
  Impl& m = *tok.impl_;
  m.config = parse_tokenizer_config(read_file(cfg_path), cfg_path);
  const TokenizerConfig& c = m.config;
  auto require_id = [&](const std::optional<std::string>& name, const char* field) {
    if (!name) VT_THROW(cfg_path, ": ", field, " is needed by add_", field, " but is not set");
    auto id = tok.token_to_id(*name);
    if (!id) VT_THROW(cfg_path, ": ", field, " '", *name, "' is not a token of tokenizer.json");
    return *id;
  };
  if (c.add_bos_token || c.add_eos_token) {
    // transformers' LlamaTokenizerFast.update_post_processor: "[bos] $A [eos]".
    Json tmpl = {{"type", "TemplateProcessing"}, {"single", Json::array()},
                 {"special_tokens", Json::object()}};
    auto add_special = [&](const std::string& name, TokenId id) {
      tmpl["single"].push_back({{"SpecialToken", {{"id", name}, {"type_id", 0}}}});
      tmpl["special_tokens"][name] = {{"id", name}, {"ids", {id}}, {"tokens", {name}}};
    };
    if (*c.add_bos_token) add_special(*c.bos_token, require_id(c.bos_token, "bos_token"));
    tmpl["single"].push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
    if (*c.add_eos_token) add_special(*c.eos_token, require_id(c.eos_token, "eos_token"));
    m.post_processor = make_post_processor(tmpl, JsonPath(cfg_path + " (add_bos_token)"));
  }
  return tok;
}

void Tokenizer::Impl::encode_text(std::string_view text, std::vector<TokenId>& out) const {
  std::vector<Segment> raw, normalized;
  std::vector<std::string> words;
  std::string piece;
  added->split(text, /*normalized=*/false, raw);
  for (const Segment& r : raw) {
    if (r.id >= 0) {
      out.push_back(r.id);
      continue;
    }
    piece.assign(text.substr(r.start, r.end - r.start));
    if (normalizer) normalizer->normalize(piece);
    normalized.clear();
    added->split(piece, /*normalized=*/true, normalized);
    for (const Segment& n : normalized) {
      if (n.id >= 0) {
        out.push_back(n.id);
        continue;
      }
      words.clear();
      words.emplace_back(piece, n.start, n.end - n.start);
      if (pre_tokenizer) pre_tokenizer->pre_tokenize(words);
      for (const std::string& w : words) model->tokenize(w, out);
    }
  }
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  std::vector<TokenId> ids;
  if (is_valid_utf8(text)) {
    impl_->encode_text(text, ids);
  } else {
    impl_->encode_text(utf8_lossy(text), ids);
  }
  if (add_special_tokens && impl_->post_processor) impl_->post_processor->process(ids);
  return ids;
}

std::vector<std::vector<TokenId>> Tokenizer::encode_batch(std::span<const std::string> texts,
                                                          bool add_special_tokens,
                                                          unsigned threads) const {
  std::vector<std::vector<TokenId>> out(texts.size());
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<size_t>(threads, texts.size()));
  if (threads <= 1) {
    for (size_t i = 0; i < texts.size(); ++i) out[i] = encode(texts[i], add_special_tokens);
    return out;
  }
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::atomic<bool> failed{false};
  auto work = [&] {
    try {
      for (size_t i; (i = next.fetch_add(1)) < texts.size() && !failed;)
        out[i] = encode(texts[i], add_special_tokens);
    } catch (...) {
      if (!failed.exchange(true)) error = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  return out;
}

std::string Tokenizer::decode(std::span<const TokenId> ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (TokenId id : ids) {
    if (skip_special_tokens && is_special(id)) continue;
    const AddedToken* t = impl_->added->find_id(id);
    if (t) {
      tokens.push_back(t->content);
    } else if (const std::string* s = impl_->model->id_to_token(id)) {
      tokens.push_back(*s);
    }
  }
  if (impl_->decoder) {
    impl_->decoder->decode_chain(tokens);
    std::string out;
    for (const std::string& t : tokens) out.append(t);
    return out;
  }
  std::string out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i) out.push_back(' ');
    out.append(tokens[i]);
  }
  return out;
}

std::optional<std::string> Tokenizer::id_to_token(TokenId id) const {
  if (const AddedToken* t = impl_->added->find_id(id)) return t->content;
  if (const std::string* s = impl_->model->id_to_token(id)) return *s;
  return std::nullopt;
}

std::optional<TokenId> Tokenizer::token_to_id(std::string_view token) const {
  if (const AddedToken* t = impl_->added->find_content(token)) return t->id;
  return impl_->model->token_to_id(token);
}

bool Tokenizer::is_special(TokenId id) const {
  return id >= 0 && static_cast<size_t>(id) < impl_->special_by_id.size() &&
         impl_->special_by_id[id];
}

bool Tokenizer::is_pending_byte(TokenId id) const {
  if (!impl_->byte_fallback_decoder || impl_->added->find_id(id)) return false;
  const std::string* s = impl_->model->id_to_token(id);
  return s && s->size() == 6 && s->compare(0, 3, "<0x") == 0 && s->back() == '>';
}

size_t Tokenizer::id_end() const { return impl_->id_end; }
const std::vector<AddedToken>& Tokenizer::added_tokens() const { return impl_->added->tokens(); }
const TokenizerConfig& Tokenizer::config() const { return impl_->config; }

std::optional<TokenId> Tokenizer::bos_id() const {
  return impl_->config.bos_token ? token_to_id(*impl_->config.bos_token) : std::nullopt;
}
std::optional<TokenId> Tokenizer::eos_id() const {
  return impl_->config.eos_token ? token_to_id(*impl_->config.eos_token) : std::nullopt;
}

}  // namespace vtllm::text
