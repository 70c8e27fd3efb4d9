#include "server/protocol.h"

#include <cmath>
#include <initializer_list>
#include <limits>

#include "server/json_body.h"

namespace vtllm::server {

using nlohmann::json;
using OJson = nlohmann::ordered_json;

namespace {

constexpr int64_t kI32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();

[[noreturn]] void out_of_range(const char* name, double v, const char* range) {
  throw ApiError::bad_request(name, str_cat("'", name, "' = ", v, " is out of range ", range));
}

// A float field checked against [lo, hi] (open ends when lo_open / hi_open).
std::optional<float> get_float(const JsonFields& f, const char* name, double lo, double hi,
                               bool lo_open, const char* range) {
  std::optional<double> v = f.opt_double(name);
  if (!v) return std::nullopt;
  const double x = *v;
  if (!std::isfinite(x) || x < lo || x > hi || (lo_open && x == lo)) out_of_range(name, x, range);
  return float(x);
}

std::vector<std::string> parse_stop(const JsonFields& f) {
  const json* v = f.find("stop");
  if (!v) return {};
  if (v->is_string()) return {v->get<std::string>()};
  if (!v->is_array()) {
    throw ApiError::bad_request(
        "stop", str_cat("'stop' must be a string or an array of strings, got ", json_type_name(*v)),
        "invalid_type");
  }
  std::vector<std::string> out;
  for (const json& s : *v) {
    if (!s.is_string()) {
      throw ApiError::bad_request("stop", "'stop' must hold only strings", "invalid_type");
    }
    if (!s.get_ref<const std::string&>().empty()) out.push_back(s.get<std::string>());
  }
  return out;
}

std::vector<std::pair<int32_t, float>> parse_logit_bias(const JsonFields& f) {
  const json* v = f.find("logit_bias");
  if (!v) return {};
  if (!v->is_object()) {
    throw ApiError::bad_request("logit_bias",
                                str_cat("'logit_bias' must be an object, got ", json_type_name(*v)),
                                "invalid_type");
  }
  std::vector<std::pair<int32_t, float>> out;
  for (auto it = v->begin(); it != v->end(); ++it) {
    // Keys are token ids written as decimal strings.
    const std::string& key = it.key();
    int64_t id = -1;
    bool ok = !key.empty() && key.size() <= 10;
    for (char c : key) ok = ok && c >= '0' && c <= '9';
    if (ok) id = std::stoll(key);
    if (!ok || id > kI32Max) {
      throw ApiError::bad_request(
          "logit_bias", str_cat("'logit_bias' key '", key, "' is not a token id"), "invalid_value");
    }
    if (!it.value().is_number()) {
      throw ApiError::bad_request("logit_bias", "'logit_bias' values must be numbers",
                                  "invalid_type");
    }
    const double b = it.value().get<double>();
    if (!std::isfinite(b) || b < -100 || b > 100) out_of_range("logit_bias", b, "[-100, 100]");
    out.emplace_back(int32_t(id), float(b));
  }
  return out;
}

std::vector<int32_t> parse_token_ids(const json& v, const std::string& param) {
  if (!v.is_array()) {
    throw ApiError::bad_request(
        param, str_cat("'", param, "' must be an array of token ids, got ", json_type_name(v)),
        "invalid_type");
  }
  std::vector<int32_t> ids;
  ids.reserve(v.size());
  for (const json& t : v) ids.push_back(int32_t(json_int(t, 0, kI32Max, JsonPath("", param))));
  return ids;
}

[[noreturn]] void throw_max_tokens_zero(const char* name) {
  throw ApiError::bad_request(name, str_cat("'", name, "' = 0 is out of range [1, inf)"),
                              "invalid_value");
}

void reject_if_present(const JsonFields& f, const char* name, const char* why) {
  if (f.find(name)) throw ApiError::bad_request(name, str_cat("'", name, "' ", why), "unsupported");
}

// Whether a field asks for something: true, a non-empty string/list/object, a number.
bool asks_for_something(const json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_string()) return !v.get_ref<const std::string&>().empty();
  if (v.is_array() || v.is_object()) return !v.empty();
  return !v.is_null();
}

// Fields vLLM accepts whose effect needs engine work vtllm does not have yet
// (a logits mask, prompt logprobs, beam search, guided decoding, ...): a 400
// naming the field rather than a reply that silently ignores it. Their neutral
// values (false, [], null) pass.
void reject_unimplemented(const JsonFields& f, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (const json* v = f.find(name); v && asks_for_something(*v)) {
      throw ApiError::bad_request(name, str_cat("'", name, "' is not supported"), "unsupported");
    }
  }
}

[[noreturn]] void bad_field(const std::string& param, const std::string& problem,
                            const char* code = "invalid_value") {
  throw ApiError::bad_request(param, str_cat("'", param, "' ", problem), code);
}

// One constraint from a field's value; `param` names it in errors.
StructuredOutput structured_from(StructuredOutput::Kind kind, const json& v,
                                 const std::string& param) {
  StructuredOutput so;
  so.kind = kind;
  so.param = param;
  switch (kind) {
    case StructuredOutput::Kind::kJson: {
      // A schema object, or its JSON text (vLLM accepts both).
      json schema = v;
      if (v.is_string()) {
        schema = json::parse(v.get<std::string>(), nullptr, false);
        if (schema.is_discarded()) bad_field(param, "is not valid JSON", "invalid_json");
      }
      if (!schema.is_object() && !schema.is_boolean())
        bad_field(param, "must be a JSON Schema (an object)", "invalid_type");
      so.schema_json = schema.dump();
      break;
    }
    case StructuredOutput::Kind::kRegex:
      if (!v.is_string() || v.get_ref<const std::string&>().empty())
        bad_field(param, "must be a non-empty string", "invalid_type");
      so.regex = v.get<std::string>();
      break;
    case StructuredOutput::Kind::kGrammar:
      if (!v.is_string() || v.get_ref<const std::string&>().empty())
        bad_field(param, "must be a non-empty string", "invalid_type");
      so.grammar = v.get<std::string>();
      break;
    case StructuredOutput::Kind::kChoice:
      if (!v.is_array() || v.empty())
        bad_field(param, "must be a non-empty array of strings", "invalid_type");
      for (const json& c : v) {
        if (!c.is_string()) bad_field(param, "must hold only strings", "invalid_type");
        so.choices.push_back(c.get<std::string>());
      }
      break;
    case StructuredOutput::Kind::kJsonObject:
      break;
  }
  return so;
}

// response_format: {"type": "text"} (nothing), "json_object", or "json_schema" with
// {"name", "schema", "strict"}.
std::optional<StructuredOutput> parse_response_format(const json& rf) {
  if (!rf.is_object()) bad_field("response_format", "must be an object", "invalid_type");
  const auto type = rf.find("type");
  if (type == rf.end() || !type->is_string())
    bad_field("response_format.type", "is required: 'text', 'json_object' or 'json_schema'",
              "missing_field");
  const std::string& t = type->get_ref<const std::string&>();
  if (t == "text") return std::nullopt;
  if (t == "json_object") {
    StructuredOutput so;
    so.kind = StructuredOutput::Kind::kJsonObject;
    so.param = "response_format";
    return so;
  }
  if (t != "json_schema") {
    bad_field("response_format.type",
              str_cat("= '", t, "' is not supported (use 'text', 'json_object' or 'json_schema')"),
              "unsupported");
  }
  const auto js = rf.find("json_schema");
  if (js == rf.end() || !js->is_object())
    bad_field("response_format.json_schema", "is required with type 'json_schema'",
              "missing_field");
  const auto name = js->find("name");
  if (name == js->end() || !name->is_string())
    bad_field("response_format.json_schema.name", "is required (a string)", "missing_field");
  const auto schema = js->find("schema");
  if (schema == js->end() || schema->is_null())
    bad_field("response_format.json_schema.schema", "is required", "missing_field");
  StructuredOutput so =
      structured_from(StructuredOutput::Kind::kJson, *schema, "response_format.json_schema.schema");
  if (const auto strict = js->find("strict"); strict != js->end() && !strict->is_null()) {
    if (!strict->is_boolean())
      bad_field("response_format.json_schema.strict", "must be a boolean", "invalid_type");
    so.strict = strict->get<bool>();
  }
  return so;
}

// structured_outputs, the guided_* names and response_format: at most one constraint.
// structured_outputs may hold only options when another field gives the constraint
// (vLLM fills response_format into it).
std::optional<StructuredOutput> parse_structured(const JsonFields& f) {
  using Kind = StructuredOutput::Kind;
  std::vector<StructuredOutput> found;
  std::optional<bool> any_whitespace;
  bool options_only = false;
  if (const json* so = f.find("structured_outputs")) {
    if (!so->is_object()) bad_field("structured_outputs", "must be an object", "invalid_type");
    static const std::pair<const char*, Kind> kKeys[] = {{"json", Kind::kJson},
                                                         {"regex", Kind::kRegex},
                                                         {"choice", Kind::kChoice},
                                                         {"grammar", Kind::kGrammar},
                                                         {"json_object", Kind::kJsonObject}};
    for (const auto& [key, kind] : kKeys) {
      const auto it = so->find(key);
      if (it == so->end() || it->is_null()) continue;
      const std::string param = str_cat("structured_outputs.", key);
      if (kind == Kind::kJsonObject) {
        if (!it->is_boolean()) bad_field(param, "must be a boolean", "invalid_type");
        if (!it->get<bool>()) continue;
      }
      found.push_back(structured_from(kind, *it, param));
    }
    if (const auto st = so->find("structural_tag"); st != so->end() && !st->is_null())
      bad_field("structured_outputs.structural_tag", "is not supported", "unsupported");
    if (const auto wp = so->find("whitespace_pattern"); wp != so->end() && !wp->is_null())
      bad_field("structured_outputs.whitespace_pattern", "is not supported", "unsupported");
    options_only = found.empty();
    // vLLM's guidance backend reads it from the request (its xgrammar one only from the
    // server's --structured-outputs-config); here the request's is honored.
    if (const auto dw = so->find("disable_any_whitespace"); dw != so->end() && !dw->is_null()) {
      if (!dw->is_boolean())
        bad_field("structured_outputs.disable_any_whitespace", "must be a boolean", "invalid_type");
      any_whitespace = !dw->get<bool>();
    }
  }
  static const std::pair<const char*, Kind> kGuided[] = {{"guided_json", Kind::kJson},
                                                         {"guided_regex", Kind::kRegex},
                                                         {"guided_choice", Kind::kChoice},
                                                         {"guided_grammar", Kind::kGrammar}};
  for (const auto& [key, kind] : kGuided)
    if (const json* v = f.find(key)) found.push_back(structured_from(kind, *v, key));
  if (const json* rf = f.find("response_format"))
    if (std::optional<StructuredOutput> so = parse_response_format(*rf)) found.push_back(*so);
  if (found.size() > 1) {
    throw ApiError::bad_request(
        found[1].param,
        str_cat("only one kind of structured outputs constraint may be given, but '",
                found[0].param, "' and '", found[1].param, "' are"));
  }
  if (options_only && found.empty())
    bad_field("structured_outputs",
              "names no constraint (one of json, regex, choice, grammar, json_object)");
  if (found.empty()) return std::nullopt;
  found[0].any_whitespace = any_whitespace;
  return found[0];
}

GenerationRequest parse_common(const JsonFields& f, const SamplingDefaults& d) {
  GenerationRequest g;
  g.temperature = d.temperature.value_or(g.temperature);
  g.top_p = d.top_p.value_or(g.top_p);
  g.top_k = d.top_k.value_or(g.top_k);
  g.min_p = d.min_p.value_or(g.min_p);
  g.repetition_penalty = d.repetition_penalty.value_or(g.repetition_penalty);
  if (auto v = f.opt_string("model")) g.model = *v;
  if (auto v = f.opt_int("n", 1, kMaxN)) g.n = int(*v);
  // 0 passes here for completions' echo; the endpoints refuse it otherwise.
  if (auto v = f.opt_int("max_tokens", 0, kI64Max)) g.max_tokens = *v;
  if (auto v = get_float(f, "temperature", 0, 1e6, false, "[0, inf)")) g.temperature = *v;
  if (auto v = get_float(f, "top_p", 0, 1, true, "(0, 1]")) g.top_p = *v;
  if (auto v = f.opt_int("top_k", -1, kI32Max)) g.top_k = int(*v);
  if (auto v = get_float(f, "min_p", 0, 1, false, "[0, 1]")) g.min_p = *v;
  if (auto v = get_float(f, "presence_penalty", -2, 2, false, "[-2, 2]")) g.presence_penalty = *v;
  if (auto v = get_float(f, "frequency_penalty", -2, 2, false, "[-2, 2]")) g.frequency_penalty = *v;
  if (auto v = get_float(f, "repetition_penalty", 0, 1e6, true, "(0, inf)")) {
    g.repetition_penalty = *v;
  }
  g.logit_bias = parse_logit_bias(f);
  if (auto v = f.opt_int("seed", kI64Min, kI64Max)) g.seed = *v;
  g.stop = parse_stop(f);
  if (const json* v = f.find("stop_token_ids"))
    g.stop_token_ids = parse_token_ids(*v, "stop_token_ids");
  if (const json* v = f.find("allowed_token_ids"); v && !v->is_null()) {
    g.allowed_token_ids = parse_token_ids(*v, "allowed_token_ids");
    if (g.allowed_token_ids->empty()) {  // vLLM: "allowed_token_ids is not None and empty!"
      throw ApiError::bad_request("allowed_token_ids", "'allowed_token_ids' is empty",
                                  "invalid_value");
    }
  }
  if (const json* v = f.find("bad_words"); v && !v->is_null()) {
    if (!v->is_array()) {
      throw ApiError::bad_request(
          "bad_words", str_cat("'bad_words' must be an array of strings, got ", json_type_name(*v)),
          "invalid_type");
    }
    for (const json& w : *v) {
      if (!w.is_string()) {
        throw ApiError::bad_request("bad_words", "'bad_words' must be an array of strings",
                                    "invalid_type");
      }
      g.bad_words.push_back(w.get<std::string>());
    }
  }
  if (auto v = f.opt_bool("ignore_eos")) g.ignore_eos = *v;
  if (auto v = f.opt_int("min_tokens", 0, kI64Max)) g.min_tokens = *v;
  if (auto v = f.opt_bool("include_stop_str_in_output")) g.include_stop_str_in_output = *v;
  if (auto v = f.opt_bool("skip_special_tokens")) g.skip_special_tokens = *v;
  if (auto v = f.opt_bool("stream")) g.stream = *v;
  if (const json* v = f.find("stream_options")) {
    if (!v->is_object()) {
      throw ApiError::bad_request("stream_options", "'stream_options' must be an object",
                                  "invalid_type");
    }
    if (!g.stream) {
      throw ApiError::bad_request("stream_options",
                                  "'stream_options' is only allowed when 'stream' is true");
    }
    const JsonFields so(*v, f.at("stream_options"));
    if (auto u = so.opt_bool("include_usage")) g.stream_options.include_usage = *u;
    if (so.opt_bool("continuous_usage_stats").value_or(false)) {
      throw ApiError::bad_request("stream_options.continuous_usage_stats",
                                  "'stream_options.continuous_usage_stats' is not supported",
                                  "unsupported");
    }
  }
  if (auto v = f.opt_int("truncate_prompt_tokens", -1, kI64Max)) {
    if (*v == 0) {
      throw ApiError::bad_request("truncate_prompt_tokens",
                                  "'truncate_prompt_tokens' must be -1 or at least 1");
    }
    g.truncate_prompt_tokens = *v;
  }
  reject_unimplemented(f, {"use_beam_search", "return_tokens_as_token_ids", "logits_processors"});
  g.structured = parse_structured(f);
  if (auto v = f.opt_bool("return_token_ids")) g.return_token_ids = *v;
  if (auto v = f.opt_int("prompt_logprobs", 0, kMaxLogprobs)) {
    // vLLM (protocol.py check_logprobs): refused with stream when it would return any.
    if (g.stream && *v > 0) {
      throw ApiError::bad_request("prompt_logprobs",
                                  "'prompt_logprobs' are not available when 'stream' is true");
    }
    g.prompt_logprobs = int(*v);
  }
  if (auto v = f.opt_string("user")) g.user = *v;
  if (g.max_tokens && g.min_tokens > *g.max_tokens) {
    throw ApiError::bad_request("min_tokens", str_cat("'min_tokens' = ", g.min_tokens,
                                                      " is above 'max_tokens' = ", *g.max_tokens));
  }
  reject_if_present(f, "suffix", "is not supported");
  if (auto b = f.opt_int("best_of", 1, kMaxN); b && *b != g.n) {
    throw ApiError::bad_request("best_of", "'best_of' other than 'n' is not supported",
                                "unsupported");
  }
  return g;
}

std::vector<Prompt> parse_prompts(const json* v) {
  if (!v) throw ApiError::bad_request("prompt", "'prompt' is required", "missing_field");
  if (v->is_string()) return {Prompt{v->get<std::string>(), {}}};
  if (!v->is_array() || v->empty()) {
    throw ApiError::bad_request(
        "prompt", "'prompt' must be a string, an array of strings, or token ids", "invalid_type");
  }
  const json& first = v->front();
  if (first.is_number()) return {Prompt{std::nullopt, parse_token_ids(*v, "prompt")}};
  std::vector<Prompt> out;
  for (const json& p : *v) {
    if (first.is_string() && p.is_string()) {
      out.push_back(Prompt{p.get<std::string>(), {}});
    } else if (first.is_array() && p.is_array()) {
      out.push_back(Prompt{std::nullopt, parse_token_ids(p, "prompt")});
    } else {
      throw ApiError::bad_request(
          "prompt", "'prompt' must be a string, an array of strings, or token ids", "invalid_type");
    }
  }
  for (const Prompt& p : out) {
    if (!p.text && p.token_ids.empty()) {
      throw ApiError::bad_request("prompt", "'prompt' holds an empty list of token ids");
    }
  }
  return out;
}

// A media part's URL: {"url": "..."} or the string itself (vLLM accepts both).
std::string media_url(const json& v, const std::string& param) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object()) {
    const auto it = v.find("url");
    if (it != v.end() && it->is_string()) return it->get<std::string>();
  }
  throw ApiError::bad_request(
      param, str_cat("'", param, "' must be {\"url\": \"...\"} or a URL string"), "invalid_type");
}

// Fills msg.content (the text parts joined with "\n") and, when the array holds media,
// msg.parts.
void message_content(const json& content, size_t i, ChatMessage& msg) {
  const std::string param = str_cat("messages[", i, "].content");
  if (content.is_string()) {
    msg.content = content.get<std::string>();
    return;
  }
  if (!content.is_array()) {
    throw ApiError::bad_request(param,
                                str_cat("'", param, "' must be a string or an array of parts, got ",
                                        json_type_name(content)),
                                "invalid_type");
  }
  std::string text;
  bool first = true, media = false;
  std::vector<ContentPart> parts;
  size_t k = 0;
  for (const json& part : content) {
    if (!part.is_object()) {
      throw ApiError::bad_request(param, str_cat("'", param, "' parts must be objects"),
                                  "invalid_type");
    }
    const std::string part_param = str_cat(param, "[", k++, "]");
    const JsonFields pf(part, JsonPath("", part_param));
    const std::optional<std::string> type = pf.opt_string("type");
    ContentPart cp;
    cp.param = part_param;
    // image_url / video_url (OpenAI, vLLM), and vLLM's {"type": "image", "image": URL}.
    if (type == "image_url" || type == "video_url" || type == "image" || type == "video") {
      const bool image = type == "image_url" || type == "image";
      const char* field = type == "image_url"   ? "image_url"
                          : type == "video_url" ? "video_url"
                          : image               ? "image"
                                                : "video";
      const json* v = pf.find(field);
      if (!v)
        throw ApiError::bad_request(part_param, str_cat("'", part_param, "' has no '", field, "'"),
                                    "missing_field");
      cp.kind = image ? ContentPart::Kind::kImage : ContentPart::Kind::kVideo;
      cp.url = media_url(*v, str_cat(part_param, ".", field));
      media = true;
      parts.push_back(std::move(cp));
      continue;
    }
    if (type != "text") {
      throw ApiError::bad_request(
          param, str_cat("'", param, "' part type '", type.value_or(""), "' is not supported"),
          "unsupported");
    }
    const std::optional<std::string> t = pf.opt_string("text");
    if (!t) throw ApiError::bad_request(param, str_cat("'", param, "' text part has no 'text'"));
    if (!first) text += "\n";
    text += *t;
    first = false;
    cp.text = *t;
    parts.push_back(std::move(cp));
  }
  msg.content = std::move(text);
  if (media) msg.parts = std::move(parts);
}

// The request body with object key order kept (nlohmann::json sorts keys): tool
// schemas and call arguments reach the template in the order the client wrote them.
class OrderedBody {
 public:
  explicit OrderedBody(std::string_view body) : body_(body) {}
  const OJson& get() {
    if (!j_) j_ = OJson::parse(body_);
    return *j_;
  }

 private:
  std::string_view body_;
  std::optional<OJson> j_;
};

// An assistant message's tool_calls (`m` is the ordered message) as the template reads them.
std::string message_tool_calls(const OJson& calls, const std::string& param) {
  if (!calls.is_array()) bad_field(param, "must be an array", "invalid_type");
  OJson out = OJson::array();
  for (size_t k = 0; k < calls.size(); ++k) {
    const OJson& c = calls[k];
    const std::string cp = str_cat(param, "[", k, "]");
    if (!c.is_object()) bad_field(cp, "must be an object", "invalid_type");
    const auto fn = c.find("function");
    if (fn == c.end() || !fn->is_object())
      bad_field(cp + ".function", "is required (an object)", "missing_field");
    const auto name = fn->find("name");
    if (name == fn->end() || !name->is_string())
      bad_field(cp + ".function.name", "is required (a string)", "missing_field");
    OJson args = OJson::object();
    if (const auto a = fn->find("arguments"); a != fn->end() && !a->is_null()) {
      if (a->is_string()) {
        if (!a->get_ref<const std::string&>().empty()) {
          args = OJson::parse(a->get<std::string>(), nullptr, false);
          if (args.is_discarded())
            bad_field(cp + ".function.arguments", "is not valid JSON", "invalid_json");
        }
      } else if (a->is_object()) {
        args = *a;
      } else {
        bad_field(cp + ".function.arguments", "must be a JSON string", "invalid_type");
      }
    }
    OJson call = OJson::object();
    if (const auto id = c.find("id"); id != c.end() && id->is_string()) call["id"] = *id;
    call["type"] = "function";
    call["function"] = {{"name", *name}, {"arguments", std::move(args)}};
    out.push_back(std::move(call));
  }
  return out.dump();
}

std::vector<ChatMessage> parse_messages(const JsonFields& f, OrderedBody& ordered) {
  const json* v = f.find("messages");
  if (!v) throw ApiError::bad_request("messages", "'messages' is required", "missing_field");
  if (!v->is_array()) {
    throw ApiError::bad_request("messages",
                                str_cat("'messages' must be an array, got ", json_type_name(*v)),
                                "invalid_type");
  }
  if (v->empty()) throw ApiError::bad_request("messages", "'messages' must not be empty");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < v->size(); ++i) {
    const json& m = (*v)[i];
    const std::string param = str_cat("messages[", i, "]");
    if (!m.is_object()) {
      throw ApiError::bad_request(param, str_cat("'", param, "' must be an object"),
                                  "invalid_type");
    }
    const JsonFields mf(m, JsonPath("", param));
    ChatMessage msg;
    const std::optional<std::string> role = mf.opt_string("role");
    if (!role || role->empty()) {
      throw ApiError::bad_request(param + ".role", str_cat("'", param, ".role' is required"),
                                  "missing_field");
    }
    static const char* const kRoles[] = {"system", "user", "assistant", "tool", "developer"};
    bool known = false;
    for (const char* r : kRoles) known = known || *role == r;
    if (!known) {
      throw ApiError::bad_request(
          param + ".role", str_cat("'", param, ".role' = '", *role, "' is not a known role"));
    }
    msg.role = *role;
    if (const json* c = mf.find("content")) {
      message_content(*c, i, msg);
    } else {
      msg.content_null = true;
    }
    if (auto n = mf.opt_string("name")) msg.name = *n;
    if (mf.find("tool_calls") && msg.role == "assistant") {
      msg.tool_calls_json =
          message_tool_calls(ordered.get()["messages"][i]["tool_calls"], param + ".tool_calls");
    }
    if (auto id = mf.opt_string("tool_call_id")) msg.tool_call_id = *id;
    if (auto r = mf.opt_string("reasoning")) {
      msg.reasoning = *r;
    } else if (auto rc = mf.opt_string("reasoning_content")) {
      msg.reasoning = *rc;
    }
    out.push_back(std::move(msg));
  }
  return out;
}

// tools, tool_choice and parallel_tool_calls (vLLM's check_tool_usage rules).
void parse_tools(const JsonFields& f, OrderedBody& ordered, ChatCompletionRequest& r) {
  const json* t = f.find("tools");
  if (t) {
    if (!t->is_array()) bad_field("tools", "must be an array of tools", "invalid_type");
    for (size_t k = 0; k < t->size(); ++k) {
      const json& tool = (*t)[k];
      const std::string tp = str_cat("tools[", k, "]");
      if (!tool.is_object()) bad_field(tp, "must be an object", "invalid_type");
      if (const auto type = tool.find("type"); type != tool.end() && *type != "function")
        bad_field(tp + ".type", "must be 'function'", "unsupported");
      const auto fn = tool.find("function");
      if (fn == tool.end() || !fn->is_object())
        bad_field(tp + ".function", "is required (an object)", "missing_field");
      const auto name = fn->find("name");
      if (name == fn->end() || !name->is_string() || name->get_ref<const std::string&>().empty())
        bad_field(tp + ".function.name", "is required (a non-empty string)", "missing_field");
      ToolFunction tf;
      tf.name = name->get<std::string>();
      if (const auto p = fn->find("parameters"); p != fn->end() && !p->is_null()) {
        if (!p->is_object())
          bad_field(tp + ".function.parameters", "must be an object", "invalid_type");
        tf.parameters_json = ordered.get()["tools"][k]["function"]["parameters"].dump();
      }
      r.tools.push_back(std::move(tf));
    }
    if (!r.tools.empty()) r.tools_json = ordered.get()["tools"].dump();
  }
  if (auto v = f.opt_bool("parallel_tool_calls")) r.parallel_tool_calls = *v;
  const json* tc = f.find("tool_choice");
  if (!tc) {
    r.tool_choice = r.tools.empty() ? ToolChoice::kNone : ToolChoice::kAuto;
    return;
  }
  if (*tc == "none") {
    r.tool_choice = ToolChoice::kNone;
    return;
  }
  if (!t) {
    throw ApiError::bad_request("tool_choice", "when 'tool_choice' is used, 'tools' must be set");
  }
  if (*tc == "auto") {
    r.tool_choice = ToolChoice::kAuto;
    return;
  }
  if (*tc == "required") {
    // OpenAI: "required" with an empty tool list behaves as "none".
    r.tool_choice = r.tools.empty() ? ToolChoice::kNone : ToolChoice::kRequired;
    return;
  }
  const char* usage =
      "correct usage: {\"type\": \"function\", \"function\": {\"name\": \"my_function\"}}";
  if (!tc->is_object()) {
    throw ApiError::bad_request(
        "tool_choice",
        str_cat("'tool_choice' = ", tc->dump(),
                " is not supported: use a named tool, 'none', 'auto' or 'required'"));
  }
  const auto fn = tc->find("function");
  if (fn == tc->end() || !fn->is_object())
    throw ApiError::bad_request("tool_choice.function",
                                str_cat("'tool_choice.function' is required; ", usage));
  const auto name = fn->find("name");
  if (name == fn->end() || !name->is_string() || name->get_ref<const std::string&>().empty())
    throw ApiError::bad_request(
        "tool_choice.function.name",
        str_cat("'tool_choice.function.name' must be a non-empty string; ", usage));
  const std::string& wanted = name->get_ref<const std::string&>();
  bool known = false;
  for (const ToolFunction& tf : r.tools) known = known || tf.name == wanted;
  if (!known) {
    throw ApiError::bad_request("tool_choice",
                                str_cat("the tool '", wanted,
                                        "' named in 'tool_choice' is not one of the 'tools'"));
  }
  r.tool_choice = ToolChoice::kNamed;
  r.tool_choice_name = wanted;
}

// A JSON Schema's text with the client's key order (nlohmann::json sorts keys, and the
// grammar lists properties in the schema's order, as xgrammar does): the value at the
// constraint's dotted `param` path in the body, parsed again when it is a string.
void keep_schema_order(std::string_view body, std::optional<StructuredOutput>& so) {
  if (!so || so->kind != StructuredOutput::Kind::kJson) return;
  const OJson* v = nullptr;
  const OJson root = OJson::parse(body);
  v = &root;
  size_t at = 0;
  while (v && at <= so->param.size()) {
    const size_t dot = std::min(so->param.find('.', at), so->param.size());
    const std::string key = so->param.substr(at, dot - at);
    v = v->is_object() && v->contains(key) ? &(*v)[key] : nullptr;
    at = dot + 1;
  }
  if (!v) return;
  const OJson schema = v->is_string() ? OJson::parse(v->get<std::string>(), nullptr, false) : *v;
  if (schema.is_object()) so->schema_json = schema.dump();
}

}  // namespace

CompletionRequest parse_completion_request(std::string_view body,
                                           const SamplingDefaults& defaults) try {
  const json j = parse_json_object(body);
  const JsonFields f(j);
  CompletionRequest r;
  r.gen = parse_common(f, defaults);
  keep_schema_order(body, r.gen.structured);
  r.prompts = parse_prompts(f.find("prompt"));
  if (auto v = f.opt_int("logprobs", 0, kMaxLogprobs)) r.gen.logprobs = int(*v);
  if (auto v = f.opt_bool("echo")) r.echo = *v;
  if (r.gen.max_tokens == 0) {
    if (!r.echo) throw_max_tokens_zero("max_tokens");
    r.echo_only = true;
  }
  // vLLM: echo with logprobs returns the prompt's logprobs too (prompt_logprobs = logprobs).
  if (r.echo && !r.gen.prompt_logprobs) r.gen.prompt_logprobs = r.gen.logprobs;
  if (r.echo && r.gen.logprobs && r.gen.stream && r.gen.n > 1) {
    throw ApiError::bad_request("echo", "'echo' with 'logprobs' and 'stream' needs 'n' = 1",
                                "unsupported");
  }
  if (size_t(r.gen.n) * r.prompts.size() > size_t(kMaxN)) {
    throw ApiError::bad_request("n", str_cat("'n' times the number of prompts is above ", kMaxN));
  }
  return r;
} catch (const JsonError& e) {
  throw to_api_error(e);
}

ChatCompletionRequest parse_chat_completion_request(std::string_view body,
                                                    const SamplingDefaults& defaults) try {
  const json j = parse_json_object(body);
  const JsonFields f(j);
  ChatCompletionRequest r;
  r.gen = parse_common(f, defaults);
  keep_schema_order(body, r.gen.structured);
  if (r.gen.max_tokens == 0) throw_max_tokens_zero("max_tokens");
  if (auto v = f.opt_int("max_completion_tokens", 1, kI64Max)) r.gen.max_tokens = *v;
  OrderedBody ordered(body);
  r.messages = parse_messages(f, ordered);
  const bool logprobs = f.opt_bool("logprobs").value_or(false);
  const std::optional<int64_t> top = f.opt_int("top_logprobs", 0, kMaxLogprobs);
  if (top && !logprobs) {
    throw ApiError::bad_request("top_logprobs", "'top_logprobs' needs 'logprobs' set to true");
  }
  if (logprobs) r.gen.logprobs = int(top.value_or(0));
  if (auto v = f.opt_bool("add_generation_prompt")) r.add_generation_prompt = *v;
  if (auto v = f.opt_bool("continue_final_message")) r.continue_final_message = *v;
  if (const json* k = f.find("chat_template_kwargs")) {
    if (!k->is_object()) {
      throw ApiError::bad_request("chat_template_kwargs",
                                  "'chat_template_kwargs' must be an object", "invalid_type");
    }
    r.chat_template_kwargs = k->dump();
  }
  // Chat's echo (the last message first in the reply) and a per-request template.
  reject_unimplemented(f, {"echo", "chat_template"});
  if (r.continue_final_message && r.add_generation_prompt) {
    throw ApiError::bad_request(
        "continue_final_message",
        "'continue_final_message' and 'add_generation_prompt' are exclusive");
  }
  parse_tools(f, ordered, r);
  return r;
} catch (const JsonError& e) {
  throw to_api_error(e);
}

SamplingDefaults SamplingDefaults::from_generation_config(const io::GenerationConfig& g) {
  SamplingDefaults d;
  // transformers' GenerationConfig defaults: a value equal to one is not in to_diff_dict().
  if (g.temperature && *g.temperature != 1.0) d.temperature = float(*g.temperature);
  if (g.top_p && *g.top_p != 1.0) d.top_p = float(*g.top_p);
  if (g.top_k && *g.top_k != 50) d.top_k = int(*g.top_k);
  if (g.min_p) d.min_p = float(*g.min_p);
  if (g.repetition_penalty && *g.repetition_penalty != 1.0)
    d.repetition_penalty = float(*g.repetition_penalty);
  if (g.max_new_tokens) d.max_tokens = *g.max_new_tokens;
  return d;
}

bool SamplingDefaults::empty() const {
  return !temperature && !top_p && !top_k && !min_p && !repetition_penalty && !max_tokens;
}

std::string SamplingDefaults::describe() const {
  std::string out;
  auto add = [&out](const char* name, const auto& v) {
    if (v) out += str_cat(out.empty() ? "" : " ", name, "=", *v);
  };
  add("temperature", temperature);
  add("top_p", top_p);
  add("top_k", top_k);
  add("min_p", min_p);
  add("repetition_penalty", repetition_penalty);
  add("max_tokens", max_tokens);
  return out;
}

engine::SamplingParams to_sampling_params(const GenerationRequest& g, int64_t max_tokens) {
  engine::SamplingParams p;
  p.n = g.n;
  p.temperature = g.temperature;
  p.top_p = g.top_p;
  p.top_k = g.top_k;
  p.min_p = g.min_p;
  p.repetition_penalty = g.repetition_penalty;
  p.frequency_penalty = g.frequency_penalty;
  p.presence_penalty = g.presence_penalty;
  p.logit_bias = g.logit_bias;
  if (g.seed) p.seed = uint64_t(*g.seed);
  p.max_tokens = max_tokens;
  p.min_tokens = g.min_tokens;
  p.ignore_eos = g.ignore_eos;
  p.stop_token_ids = g.stop_token_ids;
  p.allowed_token_ids = g.allowed_token_ids;
  p.bad_words = g.bad_words;
  p.stop = g.stop;
  p.include_stop_str_in_output = g.include_stop_str_in_output;
  p.logprobs = g.logprobs;
  p.prompt_logprobs = g.prompt_logprobs;
  p.skip_special_tokens = g.skip_special_tokens;
  return p;
}

}  // namespace vtllm::server
