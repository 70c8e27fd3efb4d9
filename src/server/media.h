// Media of chat requests: where an image_url / video_url part's bytes come from, the
// per-prompt limits, and how the server turns them into VisionInputs (on the media
// pool) and the expanded prompt the engine runs (multimodal/prompt_expansion.h).
//
// URLs: data: (base64 payload) always; file:// only under allowed_local_media_path
// (symlinks and ".." resolved first, as vLLM's --allowed-local-media-path); http(s) is
// refused (the server has no network). Every failure is an ApiError 400 naming the part.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/request.h"
#include "multimodal/media_pool.h"
#include "multimodal/prompt_expansion.h"
#include "text/tokenizer.h"

namespace vtllm::server {

// Decodes and preprocesses one medium's bytes (the checkpoint's processor); throws
// vtllm::Error naming the problem (corrupt, unsupported, too large). Thread-safe.
using MediaProcessor =
    std::function<multimodal::VisionInput(multimodal::MediaKind kind, const std::string& bytes)>;

struct MediaConfig {
  // The engine encodes images and videos; otherwise media parts are a 400 naming why.
  bool vision = false;
  bool language_model_only = false;      // --language-model-only (the 400 names it)
  std::string allowed_local_media_path;  // empty: file:// URLs refused
  // --limit-mm-per-prompt; -1: no limit.
  int64_t limit_images = -1, limit_videos = -1;
  multimodal::VisionTokenIds tokens;  // config.json's image/video/vision_start/end ids
  int64_t merge_size = 2;
  // Null: media are refused (400) saying the server has no media processor.
  MediaProcessor process;
  multimodal::MediaPool* pool = nullptr;  // null: processed on the calling thread
};

// --limit-mm-per-prompt's JSON ('{"image": 4, "video": 1}'); throws vtllm::Error naming
// the flag on anything else.
void parse_limit_mm_per_prompt(std::string_view json_text, MediaConfig& config);

// A medium of a request, in order of appearance; `param` names its part.
struct MediaRef {
  multimodal::MediaKind kind = multimodal::MediaKind::kImage;
  std::string url;
  std::string param;
};

// The bytes of `url` (data:, file:// under allowed_dir); ApiError 400 naming `param`.
std::string load_media_url(std::string_view url, const std::string& allowed_dir,
                           const std::string& param);

// RFC 4648 base64 (padding optional, no whitespace); nullopt when malformed.
std::optional<std::string> base64_decode(std::string_view text);

// Checks the refs against the config (vision available, limits), loads and processes
// them on the pool, and expands `ids` (the rendered chat, one pad per medium) into the
// prompt and MultimodalPrompt the engine takes. ApiError 400 for every failure.
// The first checks of prepare_media_prompt (vision available, a processor, the limits),
// before the chat template renders the parts.
void check_media_allowed(const MediaConfig& config, const std::vector<MediaRef>& refs);

struct MediaPrompt {
  std::vector<int32_t> ids;
  std::shared_ptr<const engine::MultimodalPrompt> mm;
};
MediaPrompt prepare_media_prompt(const MediaConfig& config, const std::vector<MediaRef>& refs,
                                 const std::vector<int32_t>& ids, const text::Tokenizer& tokenizer);

}  // namespace vtllm::server
