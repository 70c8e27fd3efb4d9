#include "server/media.h"

#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/error.h"
#include "base/file.h"
#include "server/api_error.h"

namespace vtllm::server {
namespace {

using multimodal::MediaKind;

const char* kind_name(MediaKind k) { return k == MediaKind::kImage ? "image" : "video"; }

}  // namespace

void parse_limit_mm_per_prompt(std::string_view json_text, MediaConfig& c) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception&) {
    VT_THROW("--limit-mm-per-prompt: '", json_text, "' is not JSON (expected '{\"image\": 4, ",
             "\"video\": 1}')");
  }
  if (!j.is_object())
    VT_THROW("--limit-mm-per-prompt: expected a JSON object, got '", json_text, "'");
  for (const auto& [k, v] : j.items()) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0)
      VT_THROW("--limit-mm-per-prompt: '", k, "' must be a non-negative integer");
    if (k == "image")
      c.limit_images = v.get<int64_t>();
    else if (k == "video")
      c.limit_videos = v.get<int64_t>();
    else
      VT_THROW("--limit-mm-per-prompt: unknown modality '", k, "' (expected image, video)");
  }
}

namespace {

// The 6-bit value of each byte in base64 and base64url ('+' '-' 62, '/' '_' 63), -1 for
// every other byte.
constexpr std::array<int8_t, 256> kBase64Values = [] {
  std::array<int8_t, 256> t{};
  t.fill(-1);
  for (int i = 0; i < 26; ++i) t[size_t('A' + i)] = int8_t(i), t[size_t('a' + i)] = int8_t(26 + i);
  for (int i = 0; i < 10; ++i) t[size_t('0' + i)] = int8_t(52 + i);
  t[size_t('+')] = t[size_t('-')] = 62;
  t[size_t('/')] = t[size_t('_')] = 63;
  return t;
}();

}  // namespace

std::optional<std::string> base64_decode(std::string_view s) {
  while (!s.empty() && s.back() == '=') s.remove_suffix(1);
  if (s.size() % 4 == 1) return std::nullopt;
  const auto* in = reinterpret_cast<const uint8_t*>(s.data());
  const size_t quads = s.size() / 4, rest = s.size() % 4;
  std::string out(quads * 3 + (rest ? rest - 1 : 0), '\0');
  char* o = out.data();
  // Four characters to three bytes; a negative value anywhere marks a byte outside the
  // alphabet.
  for (size_t q = 0; q < quads; ++q, in += 4, o += 3) {
    const int32_t a = kBase64Values[in[0]], b = kBase64Values[in[1]], c = kBase64Values[in[2]],
                  d = kBase64Values[in[3]];
    if ((a | b | c | d) < 0) return std::nullopt;
    const uint32_t v = uint32_t(a) << 18 | uint32_t(b) << 12 | uint32_t(c) << 6 | uint32_t(d);
    o[0] = char(v >> 16), o[1] = char(v >> 8), o[2] = char(v);
  }
  // Two or three characters left: one or two bytes (their unused low bits are ignored).
  uint32_t v = 0;
  for (size_t i = 0; i < rest; ++i) {
    const int32_t x = kBase64Values[in[i]];
    if (x < 0) return std::nullopt;
    v |= uint32_t(x) << (18 - 6 * i);
  }
  for (size_t i = 0; i + 1 < rest; ++i) o[i] = char(v >> (16 - 8 * i));
  return out;
}

std::string load_media_url(std::string_view url, const std::string& allowed_dir,
                           const std::string& param) {
  namespace fs = std::filesystem;
  if (url.starts_with("data:")) {
    const size_t comma = url.find(',');
    if (comma == std::string_view::npos)
      throw ApiError::bad_request(param, str_cat("'", param, "': a data: URL without a ','"));
    const std::string_view meta = url.substr(5, comma - 5);
    if (!meta.ends_with(";base64"))
      throw ApiError::bad_request(param,
                                  str_cat("'", param, "': only base64 data: URLs are supported"));
    std::optional<std::string> bytes = base64_decode(url.substr(comma + 1));
    if (!bytes)
      throw ApiError::bad_request(param,
                                  str_cat("'", param, "': the data: URL is not valid base64"));
    if (bytes->empty()) throw ApiError::bad_request(param, str_cat("'", param, "': empty data"));
    return std::move(*bytes);
  }
  if (url.starts_with("http://") || url.starts_with("https://"))
    throw ApiError::bad_request(
        param,
        str_cat("'", param, "': this server has no network access, so it cannot fetch ",
                url.substr(0, url.find(':')), " URLs; send the media inline as a base64 data: URL"),
        "unsupported");
  if (url.starts_with("file://")) {
    if (allowed_dir.empty())
      throw ApiError::bad_request(param,
                                  str_cat("'", param,
                                          "': file:// URLs are refused unless the server "
                                          "runs with --allowed-local-media-path"),
                                  "unsupported");
    std::error_code ec_root, ec_file, ec;
    const fs::path root = fs::weakly_canonical(allowed_dir, ec_root);
    const fs::path file = fs::weakly_canonical(fs::path(std::string(url.substr(7))), ec_file);
    const auto rel = file.lexically_relative(root);
    if (ec_root || ec_file || rel.empty() || *rel.begin() == ".." || !file.is_absolute())
      throw ApiError::bad_request(
          param, str_cat("'", param, "': the file is not under --allowed-local-media-path"));
    if (!fs::is_regular_file(file, ec))
      throw ApiError::bad_request(param, str_cat("'", param, "': no such file"));
    try {
      return read_file(file.string());
    } catch (const Error& e) {
      throw ApiError::bad_request(param, str_cat("'", param, "': ", e.what()));
    }
  }
  throw ApiError::bad_request(
      param, str_cat("'", param, "': unsupported URL (expected a data: or file:// URL)"));
}

void check_media_allowed(const MediaConfig& c, const std::vector<MediaRef>& refs) {
  const std::string param = refs.empty() ? "messages" : refs.front().param;
  if (!c.vision)
    throw ApiError::bad_request(
        param,
        c.language_model_only
            ? "images and videos are refused: the server runs with --language-model-only"
            : "images and videos are refused: this model has no vision tower",
        "unsupported");
  int64_t counts[2] = {0, 0};
  for (const MediaRef& r : refs) ++counts[r.kind == MediaKind::kImage ? 0 : 1];
  const int64_t limits[2] = {c.limit_images, c.limit_videos};
  for (int k = 0; k < 2; ++k)
    if (limits[k] >= 0 && counts[k] > limits[k])
      throw ApiError::bad_request(
          "messages", str_cat("the request has ", counts[k], " ", k == 0 ? "images" : "videos",
                              ", more than --limit-mm-per-prompt allows (", limits[k], ")"));
  if (!c.process)
    throw ApiError::bad_request(param,
                                "images and videos are refused: this server has no media "
                                "processor (image and video decoding)",
                                "unsupported");
}

MediaPrompt prepare_media_prompt(const MediaConfig& c, const std::vector<MediaRef>& refs,
                                 const std::vector<int32_t>& ids, const text::Tokenizer& tok) {
  check_media_allowed(c, refs);
  std::vector<std::future<std::shared_ptr<const multimodal::VisionInput>>> futures;
  for (const MediaRef& r : refs) {
    std::string bytes = load_media_url(r.url, c.allowed_local_media_path, r.param);
    auto job = [process = c.process, kind = r.kind, b = std::move(bytes)] {
      return process(kind, b);
    };
    if (c.pool) {
      futures.push_back(c.pool->submit(std::move(job)));
    } else {
      std::promise<std::shared_ptr<const multimodal::VisionInput>> p;
      try {
        p.set_value(std::make_shared<const multimodal::VisionInput>(job()));
      } catch (...) {
        p.set_exception(std::current_exception());
      }
      futures.push_back(p.get_future());
    }
  }
  std::vector<std::shared_ptr<const multimodal::VisionInput>> inputs;
  std::optional<ApiError> first_error;
  for (size_t i = 0; i < futures.size(); ++i) {
    try {
      inputs.push_back(futures[i].get());  // every future waited for, errors or not
      VT_CHECK(inputs.back()->kind == refs[i].kind, "the processor returned a ",
               kind_name(inputs.back()->kind), " for a ", kind_name(refs[i].kind));
    } catch (const Error& e) {
      if (!first_error)
        first_error = ApiError::bad_request(
            refs[i].param,
            str_cat("'", refs[i].param, "': ", kind_name(refs[i].kind), ": ", e.what()));
    }
  }
  if (first_error) throw *first_error;

  std::vector<const multimodal::VisionInput*> raw;
  for (const auto& v : inputs) raw.push_back(v.get());
  try {
    const multimodal::ExpandedPrompt e = multimodal::expand_prompt(
        ids, raw, c.tokens, c.merge_size, [&](std::string_view s) { return tok.encode(s, false); });
    return MediaPrompt{e.ids,
                       engine::make_multimodal_prompt(e, inputs, c.tokens.pads(), c.merge_size)};
  } catch (const Error& e) {
    // The chat template wrote another number of placeholders than the parts.
    throw ApiError::bad_request("messages", str_cat("chat template: ", e.what()));
  }
}

}  // namespace vtllm::server
