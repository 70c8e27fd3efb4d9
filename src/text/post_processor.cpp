#include "text/post_processor.h"

#include <map>
#include <nlohmann/json.hpp>

#include "base/error.h"

namespace vtllm::text {

namespace {

constexpr int kMaxDepth = 16;

// One piece of the "single" template: the sequence itself or special-token ids.
struct Piece {
  bool is_sequence;
  std::vector<TokenId> ids;
};

class TemplateProcessor final : public PostProcessor {
 public:
  explicit TemplateProcessor(std::vector<Piece> single) : single_(std::move(single)) {}
  void process(std::vector<TokenId>& ids) const override {
    std::vector<TokenId> out;
    out.reserve(ids.size() + 8);
    for (const Piece& p : single_) {
      if (p.is_sequence) {
        out.insert(out.end(), ids.begin(), ids.end());
      } else {
        out.insert(out.end(), p.ids.begin(), p.ids.end());
      }
    }
    ids = std::move(out);
  }

 private:
  std::vector<Piece> single_;
};

class NoIdChange final : public PostProcessor {
 public:
  void process(std::vector<TokenId>&) const override {}
};

class SequenceProcessor final : public PostProcessor {
 public:
  explicit SequenceProcessor(std::vector<std::unique_ptr<PostProcessor>> parts)
      : parts_(std::move(parts)) {}
  void process(std::vector<TokenId>& ids) const override {
    for (const auto& p : parts_) p->process(ids);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

std::unique_ptr<PostProcessor> make_template(const Json& j, const JsonPath& at) {
  // special_tokens: {"<name>": {"id": "<name>", "ids": [..], "tokens": [..]}}
  std::map<std::string, std::vector<TokenId>> specials;
  const JsonPath st_at = at.key("special_tokens");
  const Json& st = json_object(json_member(j, "special_tokens", at), st_at);
  for (auto it = st.begin(); it != st.end(); ++it) {
    const JsonPath e_at = st_at.key(it.key());
    const JsonPath ids_at = e_at.key("ids");
    const Json& ids = json_array(json_member(it.value(), "ids", e_at), ids_at);
    std::vector<TokenId> v;
    for (size_t i = 0; i < ids.size(); ++i)
      v.push_back(static_cast<TokenId>(json_int(ids[i], 0, (int64_t{1} << 31) - 1, ids_at.index(i))));
    specials[it.key()] = std::move(v);
  }
  const JsonPath single_at = at.key("single");
  const Json& single = json_array(json_member(j, "single", at), single_at);
  std::vector<Piece> pieces;
  for (size_t i = 0; i < single.size(); ++i) {
    const JsonPath p_at = single_at.index(i);
    if (const Json* seq = json_optional(single[i], "Sequence", p_at)) {
      const std::string id = json_string(json_member(*seq, "id", p_at.key("Sequence")),
                                         p_at.key("Sequence").key("id"));
      if (id != "A")
        VT_THROW(p_at.str(), ": the single-sequence template names sequence '", id, "', not 'A'");
      pieces.push_back({true, {}});
    } else if (const Json* sp = json_optional(single[i], "SpecialToken", p_at)) {
      const JsonPath sp_at = p_at.key("SpecialToken");
      const std::string name = json_string(json_member(*sp, "id", sp_at), sp_at.key("id"));
      auto found = specials.find(name);
      if (found == specials.end())
        VT_THROW(sp_at.str(), ": special token '", name, "' is missing from special_tokens");
      pieces.push_back({false, found->second});
    } else {
      VT_THROW(p_at.str(), ": expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    }
  }
  return std::make_unique<TemplateProcessor>(std::move(pieces));
}

}  // namespace

std::unique_ptr<PostProcessor> make_post_processor(const Json& j, const JsonPath& at, int depth) {
  if (depth > kMaxDepth) VT_THROW(at.str(), ": post-processors nested deeper than ", kMaxDepth);
  const std::string type = json_type(j, at);
  if (type == "TemplateProcessing") return make_template(j, at);
  if (type == "ByteLevel") return std::make_unique<NoIdChange>();
  if (type == "Sequence") {
    const JsonPath list_at = at.key("processors");
    const Json& list = json_array(json_member(j, "processors", at), list_at);
    std::vector<std::unique_ptr<PostProcessor>> parts;
    for (size_t i = 0; i < list.size(); ++i)
      parts.push_back(make_post_processor(list[i], list_at.index(i), depth + 1));
    return std::make_unique<SequenceProcessor>(std::move(parts));
  }
  VT_THROW(at.str(), ": unsupported post-processor type '", type, "'");
}

}  // namespace vtllm::text
