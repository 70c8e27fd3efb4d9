#include "text/decoder.h"

#include <nlohmann/json.hpp>
#include <optional>

#include "base/error.h"
#include "text/byte_level.h"
#include "text/pattern.h"
#include "text/regex.h"
#include "text/utf8.h"

namespace vtllm::text {

namespace {

constexpr int kMaxDepth = 16;

class ByteLevelDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& t : tokens) {
      if (auto b = byte_level_decode_token(t)) {
        bytes.append(*b);
      } else {
        bytes.append(t);  // a token outside the alphabet (an added token) keeps its bytes
      }
    }
    tokens.assign(1, utf8_lossy(bytes));
  }
};

// "<0xAB>" -> 0xAB, as HF's u8::from_str_radix(&token[3..5], 16) accepts it.
std::optional<uint8_t> byte_token_value(const std::string& t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return std::nullopt;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (t[3] == '+') {  // from_str_radix takes a leading plus sign
    const int lo = hex(t[4]);
    return lo < 0 ? std::nullopt : std::optional<uint8_t>(static_cast<uint8_t>(lo));
  }
  const int hi = hex(t[3]), lo = hex(t[4]);
  if (hi < 0 || lo < 0) return std::nullopt;
  return static_cast<uint8_t>(hi * 16 + lo);
}

class ByteFallbackDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    out.reserve(tokens.size());
    std::string pending;
    auto flush = [&] {
      if (pending.empty()) return;
      if (is_valid_utf8(pending)) {
        out.push_back(pending);
      } else {
        // HF writes one U+FFFD per byte when the run is not valid UTF-8.
        for (size_t i = 0; i < pending.size(); ++i) out.emplace_back(kReplacementChar);
      }
      pending.clear();
    };
    for (std::string& t : tokens) {
      if (auto b = byte_token_value(t)) {
        pending.push_back(static_cast<char>(*b));
        continue;
      }
      flush();
      out.push_back(std::move(t));
    }
    flush();
    tokens = std::move(out);
  }
};

class FuseDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const std::string& t : tokens) all.append(t);
    tokens.assign(1, std::move(all));
  }
};

class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(Regex pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<Match> matches;
    for (std::string& t : tokens) {
      matches.clear();
      pattern_.find_all(t, matches);
      if (matches.empty()) continue;
      std::string out;
      size_t last = 0;
      for (const Match& m : matches) {
        out.append(t, last, m.start - last).append(content_);
        last = m.end;
      }
      out.append(t, last, std::string::npos);
      t = std::move(out);
    }
  }

 private:
  Regex pattern_;
  std::string content_;
};

class StripDecoder final : public Decoder {
 public:
  StripDecoder(char32_t content, size_t start, size_t stop)
      : content_(content), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) {
      std::vector<std::pair<size_t, char32_t>> chars;  // (byte offset, code point)
      for (size_t i = 0; i < t.size();) {
        size_t len = 0;
        chars.emplace_back(i, utf8_decode(t, i, &len));
        i += len;
      }
      size_t start_cut = 0;
      for (size_t i = 0; i < chars.size() && i < start_; ++i) {
        if (chars[i].second != content_) break;
        start_cut = i + 1;
      }
      size_t stop_cut = chars.size();
      for (size_t i = 0; i < stop_ && i < chars.size(); ++i) {
        const size_t index = chars.size() - i - 1;
        if (chars[index].second != content_) break;
        stop_cut = index;
      }
      if (stop_cut < start_cut) stop_cut = start_cut;  // HF would panic on this slice
      const size_t b0 = start_cut < chars.size() ? chars[start_cut].first : t.size();
      const size_t b1 = stop_cut < chars.size() ? chars[stop_cut].first : t.size();
      t = t.substr(b0, b1 - b0);
    }
  }

 private:
  char32_t content_;
  size_t start_, stop_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> parts)
      : parts_(std::move(parts)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& p : parts_) p->decode_chain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

}  // namespace

std::unique_ptr<Decoder> make_decoder(const Json& j, const JsonPath& at, int depth) {
  if (depth > kMaxDepth) VT_THROW(at.str(), ": decoders nested deeper than ", kMaxDepth);
  const std::string type = json_type(j, at);
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Replace") {
    return std::make_unique<ReplaceDecoder>(
        make_pattern(json_member(j, "pattern", at), at.key("pattern")),
        json_string(json_member(j, "content", at), at.key("content")));
  }
  if (type == "Strip") {
    const std::string content = json_string(json_member(j, "content", at), at.key("content"));
    size_t len = 0;
    if (content.empty() || !is_valid_utf8(content) ||
        (utf8_decode(content, 0, &len), len != content.size()))
      VT_THROW(at.key("content").str(), ": expected exactly one character");
    const int64_t kMax = int64_t{1} << 20;
    return std::make_unique<StripDecoder>(
        utf8_decode(content, 0, &len),
        static_cast<size_t>(json_int(json_member(j, "start", at), 0, kMax, at.key("start"))),
        static_cast<size_t>(json_int(json_member(j, "stop", at), 0, kMax, at.key("stop"))));
  }
  if (type == "Sequence") {
    const JsonPath list_at = at.key("decoders");
    const Json& list = json_array(json_member(j, "decoders", at), list_at);
    std::vector<std::unique_ptr<Decoder>> parts;
    for (size_t i = 0; i < list.size(); ++i)
      parts.push_back(make_decoder(list[i], list_at.index(i), depth + 1));
    return std::make_unique<SequenceDecoder>(std::move(parts));
  }
  VT_THROW(at.str(), ": unsupported decoder type '", type, "'");
}

}  // namespace vtllm::text
