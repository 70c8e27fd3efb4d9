#include "text/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <vector>

#include "base/error.h"
#include "text/pattern.h"
#include "text/regex.h"
#include "text/utf8.h"

namespace vtllm::text {

namespace {

constexpr int kMaxDepth = 16;

bool is_ascii(const std::string& s) {
  for (unsigned char c : s) {
    if (c >= 0x80) return false;
  }
  return true;
}

class UnicodeForm final : public Normalizer {
 public:
  UnicodeForm(int options, bool ascii_stable) : options_(options), ascii_stable_(ascii_stable) {}
  void normalize(std::string& s) const override {
    if (ascii_stable_ && is_ascii(s)) return;  // every form leaves ASCII alone
    utf8proc_uint8_t* dst = nullptr;
    const utf8proc_ssize_t n =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                     static_cast<utf8proc_ssize_t>(s.size()), &dst,
                     static_cast<utf8proc_option_t>(options_));
    if (n < 0) VT_THROW("normalizer: utf8proc failed: ", utf8proc_errmsg(n));
    s.assign(reinterpret_cast<const char*>(dst), static_cast<size_t>(n));
    std::free(dst);
  }

 private:
  int options_;
  bool ascii_stable_;
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> parts)
      : parts_(std::move(parts)) {}
  void normalize(std::string& s) const override {
    for (const auto& p : parts_) p->normalize(s);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

class ReplaceNormalizer final : public Normalizer {
 public:
  ReplaceNormalizer(Regex pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void normalize(std::string& s) const override {
    std::vector<Match> matches;
    pattern_.find_all(s, matches);
    if (matches.empty()) return;
    std::string out;
    out.reserve(s.size());
    size_t last = 0;
    for (const Match& m : matches) {
      out.append(s, last, m.start - last).append(content_);
      last = m.end;
    }
    out.append(s, last, std::string::npos);
    s = std::move(out);
  }

 private:
  Regex pattern_;
  std::string content_;
};

class PrependNormalizer final : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(std::string& s) const override {
    if (!s.empty()) s.insert(0, prefix_);
  }

 private:
  std::string prefix_;
};

class StripNormalizer final : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string& s) const override {
    size_t begin = 0, end = s.size();
    if (left_) {
      while (begin < end) {
        size_t len = 0;
        if (!is_white_space(utf8_decode(s, begin, &len))) break;
        begin += len;
      }
    }
    if (right_) {
      while (end > begin) {
        size_t k = end - 1;
        while (k > begin && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) --k;
        size_t len = 0;
        if (!is_white_space(utf8_decode(s, k, &len))) break;
        end = k;
      }
    }
    s = s.substr(begin, end - begin);
  }

 private:
  bool left_, right_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const Json& j, const JsonPath& at, int depth) {
  if (depth > kMaxDepth) VT_THROW(at.str(), ": normalizers nested deeper than ", kMaxDepth);
  const std::string type = json_type(j, at);
  if (type == "NFC") return std::make_unique<UnicodeForm>(UTF8PROC_STABLE | UTF8PROC_COMPOSE, true);
  if (type == "NFD") return std::make_unique<UnicodeForm>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE, true);
  if (type == "NFKC")
    return std::make_unique<UnicodeForm>(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT, true);
  if (type == "NFKD")
    return std::make_unique<UnicodeForm>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT,
                                         true);
  if (type == "Sequence") {
    const JsonPath list_at = at.key("normalizers");
    const Json& list = json_array(json_member(j, "normalizers", at), list_at);
    std::vector<std::unique_ptr<Normalizer>> parts;
    for (size_t i = 0; i < list.size(); ++i)
      parts.push_back(make_normalizer(list[i], list_at.index(i), depth + 1));
    return std::make_unique<SequenceNormalizer>(std::move(parts));
  }
  if (type == "Replace") {
    return std::make_unique<ReplaceNormalizer>(
        make_pattern(json_member(j, "pattern", at), at.key("pattern")),
        json_string(json_member(j, "content", at), at.key("content")));
  }
  if (type == "Prepend") {
    return std::make_unique<PrependNormalizer>(
        json_string(json_member(j, "prepend", at), at.key("prepend")));
  }
  if (type == "Strip") {
    return std::make_unique<StripNormalizer>(
        json_bool(json_member(j, "strip_left", at), at.key("strip_left")),
        json_bool(json_member(j, "strip_right", at), at.key("strip_right")));
  }
  VT_THROW(at.str(), ": unsupported normalizer type '", type, "'");
}

}  // namespace vtllm::text
