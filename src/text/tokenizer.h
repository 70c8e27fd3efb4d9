// vtllm::text::Tokenizer: HF tokenizer.json, byte-exact with the `tokenizers`
// library (v0.22) on what it supports.
//
// encode = added tokens split out of the raw text, normalizer on the rest,
// added tokens with normalized=true split out of that, pre-tokenizer, BPE
// model, then (with add_special_tokens) the post-processor. Supported
// components are listed in normalizer.h, pre_tokenizer.h, bpe.h,
// post_processor.h and decoder.h; anything else is a load error naming it.
//
// Thread-safety: every method is const and safe to call concurrently on one
// loaded Tokenizer.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "text/added_vocabulary.h"
#include "text/bpe.h"
#include "text/tokenizer_config.h"

namespace vtllm::text {

class Tokenizer {
 public:
  // The text of a tokenizer.json; `origin` names it in error messages.
  static Tokenizer from_json(std::string_view json_text, std::string_view origin = "tokenizer.json");
  static Tokenizer from_file(const std::string& tokenizer_json_path);
  // DIR/tokenizer.json plus, when present, DIR/tokenizer_config.json: its
  // bos/eos/pad tokens, and for Llama/Gemma tokenizer classes transformers'
  // add_bos_token/add_eos_token rule, which replaces the post-processor by
  // [bos] A [eos] (so ids then follow transformers, not bare `tokenizers`).
  static Tokenizer from_dir(const std::string& dir);

  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  // `text` is UTF-8; invalid sequences are first replaced by U+FFFD (what the
  // Rust library sees when such bytes come through a lossy decode).
  std::vector<TokenId> encode(std::string_view text, bool add_special_tokens = true) const;
  // Encodes each text on up to `threads` threads (0: one per hardware thread).
  std::vector<std::vector<TokenId>> encode_batch(std::span<const std::string> texts,
                                                 bool add_special_tokens = true,
                                                 unsigned threads = 0) const;

  // HF decode: ids that name no token are dropped, special tokens too when
  // `skip_special_tokens`; the decoder joins the rest (without one: spaces).
  std::string decode(std::span<const TokenId> ids, bool skip_special_tokens = false) const;

  std::optional<std::string> id_to_token(TokenId id) const;
  std::optional<TokenId> token_to_id(std::string_view token) const;
  // True for ids of added tokens marked special (what skip_special_tokens drops).
  bool is_special(TokenId id) const;
  // True when the decoder has ByteFallback and `id` is a byte token "<0xAB>":
  // its text can still change with the next id (a run of bytes that is not
  // valid UTF-8 becomes one U+FFFD per byte).
  bool is_pending_byte(TokenId id) const;
  // One past the largest id of any token (the embedding rows a model needs at least).
  size_t id_end() const;
  const std::vector<AddedToken>& added_tokens() const;
  // Empty unless loaded with from_dir and the file exists.
  const TokenizerConfig& config() const;
  std::optional<TokenId> bos_id() const;
  std::optional<TokenId> eos_id() const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vtllm::text
