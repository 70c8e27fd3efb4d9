#include "server/tool_parser.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>

#include "server/python_json.h"

namespace vtllm::server {

using OJson = nlohmann::ordered_json;

namespace {

constexpr std::string_view kToolCall = "<tool_call>";
constexpr std::string_view kToolCallEnd = "</tool_call>";
constexpr std::string_view kFunction = "<function=";
constexpr std::string_view kFunctionEnd = "</function>";
constexpr std::string_view kParameter = "<parameter=";
constexpr std::string_view kParameterEnd = "</parameter>";

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t skip_space(std::string_view s, size_t pos) {
  while (pos < s.size() && is_space(s[pos])) ++pos;
  return pos;
}

bool starts_at(std::string_view s, size_t pos, std::string_view tag) {
  return pos <= s.size() && s.substr(pos).starts_with(tag);
}

// Whether s[pos..] is a proper prefix of `tag` (more text may complete it).
bool could_become(std::string_view s, size_t pos, std::string_view tag) {
  const std::string_view rest = s.substr(pos);
  return rest.size() < tag.size() && tag.starts_with(rest);
}

// The length of the longest proper prefix of `tag` that ends `s`.
size_t tail_overlap(std::string_view s, std::string_view tag) {
  for (size_t k = std::min(s.size(), tag.size() - 1); k > 0; --k) {
    if (s.substr(s.size() - k) == tag.substr(0, k)) return k;
  }
  return 0;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// Python's int(): optional sign, digits with single underscores between them.
std::optional<OJson> parse_py_int(std::string_view text) {
  const std::string_view s = trim(text);
  std::string sign, digits;
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    if (s[i] == '-') sign = "-";
    ++i;
  }
  for (; i < s.size(); ++i) {
    if (s[i] >= '0' && s[i] <= '9') {
      digits += s[i];
    } else if (!(s[i] == '_' && !digits.empty() && s[i - 1] != '_' && i + 1 < s.size())) {
      return std::nullopt;
    }
  }
  if (digits.empty() || s.back() == '_') return std::nullopt;
  const size_t nz = digits.find_first_not_of('0');
  digits = nz == std::string::npos ? "0" : digits.substr(nz);
  try {
    return OJson::parse(sign + digits);
  } catch (const OJson::exception&) {
    return std::nullopt;
  }
}

// Python's float(), then an integral value as an integer (vLLM's rule). Infinite and
// NaN values stay text.
std::optional<OJson> parse_py_float(std::string_view text) {
  const std::string s(trim(text));
  if (s.empty()) return std::nullopt;
  std::string clean;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool between = i > 0 && i + 1 < s.size() && std::isdigit((unsigned char)s[i - 1]) &&
                         std::isdigit((unsigned char)s[i + 1]);
    if (s[i] == '_' && between) continue;
    clean += s[i];
  }
  const char* begin = clean.c_str();
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  if (end != begin + clean.size() || !std::isfinite(v)) return std::nullopt;
  // strtod reads hex floats; Python's float() does not.
  if (clean.find_first_of("xX") != std::string::npos) return std::nullopt;
  if (v == std::trunc(v) && std::fabs(v) < 9.2e18) return OJson(int64_t(v));
  return OJson(v);
}

// The `properties` object of the named tool's parameters (null when absent).
OJson tool_properties(const std::vector<ToolFunction>& tools, std::string_view name) {
  for (const ToolFunction& t : tools) {
    if (t.name != name) continue;
    try {
      const OJson p = OJson::parse(t.parameters_json);
      if (p.is_object() && p.contains("properties") && p["properties"].is_object())
        return p["properties"];
    } catch (const OJson::exception&) {
    }
    return OJson();
  }
  return OJson();
}

// vLLM Qwen3CoderToolParser._convert_param_value, as the header states it.
OJson convert_param(const std::string& value, const std::string& name, const OJson& props) {
  if (!props.is_object() || !props.contains(name)) return OJson(value);
  const OJson& schema = props[name];
  std::string type = "string";
  bool allows_null = false;
  auto type_name = [](const OJson& t) {
    return t.is_string() ? lower(trim(t.get<std::string>())) : lower(t.dump());
  };
  if (schema.is_object() && schema.contains("type")) {
    const OJson& t = schema["type"];
    if (t.is_array()) {  // ["string", "null"]: the first non-null type, nullable
      bool picked = false;
      for (const OJson& x : t) {
        const std::string n = type_name(x);
        if (n == "null") {
          allows_null = true;
        } else if (!picked) {
          type = n;
          picked = true;
        }
      }
    } else {
      type = type_name(t);
      allows_null = type == "null";
    }
  } else if (schema.is_object() && schema.contains("anyOf") && schema["anyOf"].is_array()) {
    bool picked = false;
    for (const OJson& opt : schema["anyOf"]) {
      if (!opt.is_object() || !opt.contains("type")) continue;
      const std::string n = type_name(opt["type"]);
      if (n == "null") {
        allows_null = true;
      } else if (!picked) {
        type = n;
        picked = true;
      }
    }
  }
  const std::string low = lower(value);
  const bool null_text = low == "null" || low == "none";
  if (allows_null && null_text) return OJson();
  static const char* const kStringTypes[] = {"string", "str", "text", "varchar", "char", "enum"};
  for (const char* s : kStringTypes)
    if (type == s) return OJson(value);
  if (null_text) return OJson();
  auto starts = [&](const char* p) { return type.rfind(p, 0) == 0; };
  if (starts("int") || starts("uint") || starts("long") || starts("short") || starts("unsigned")) {
    if (std::optional<OJson> v = parse_py_int(value)) return *v;
    return OJson(value);
  }
  if (starts("num") || starts("float")) {
    if (std::optional<OJson> v = parse_py_float(value)) return *v;
    return OJson(value);
  }
  if (type == "boolean" || type == "bool" || type == "binary") return OJson(low == "true");
  try {
    return OJson::parse(value);
  } catch (const OJson::exception&) {
    return OJson(value);
  }
}

// One call as the text so far shows it.
struct PartialCall {
  size_t start = 0;  // where its text begins (stable as text is appended)
  std::string name;
  std::string arguments;  // a prefix of the final arguments; whole when closed
  bool closed = false;
};

struct Snapshot {
  size_t content_end = 0;  // content is text[0, content_end)
  std::vector<PartialCall> calls;
};

// Where the next qwen3_coder call begins at or after `from`: the position of its
// "<function=" (npos: none yet) and, through `held`, how far text is surely not a call.
size_t find_xml_call(std::string_view s, size_t from, bool final, size_t& held) {
  size_t p = from;
  while (true) {
    const size_t a = s.find(kToolCall, p);
    const size_t f = s.find(kFunction, p);
    if (f != std::string_view::npos && (a == std::string_view::npos || f < a)) {
      held = f;
      return f;
    }
    if (a == std::string_view::npos) {
      held = final ? s.size()
                   : s.size() - std::max(tail_overlap(s, kToolCall), tail_overlap(s, kFunction));
      held = std::max(held, p);
      return std::string_view::npos;
    }
    const size_t w = skip_space(s, a + kToolCall.size());
    if (starts_at(s, w, kFunction)) {
      held = a;
      return w;
    }
    if (!final && (w == s.size() || could_become(s, w, kFunction))) {
      held = a;  // undecided: wait for more text
      return std::string_view::npos;
    }
    p = a + kToolCall.size();  // "<tool_call>" in prose: not a call
  }
}

// The end of the value that starts at `v`: the index of its structural "</parameter>",
// npos while undecided (or, with `final`, absent).
size_t find_param_end(std::string_view s, size_t v, bool final) {
  size_t c = v;
  while ((c = s.find(kParameterEnd, c)) != std::string_view::npos) {
    const size_t t = skip_space(s, c + kParameterEnd.size());
    if (t == s.size()) {
      if (final) return c;
      return std::string_view::npos;
    }
    if (starts_at(s, t, kParameter) || starts_at(s, t, kFunctionEnd) ||
        starts_at(s, t, kToolCallEnd))
      return c;
    if (!final && (could_become(s, t, kParameter) || could_become(s, t, kFunctionEnd) ||
                   could_become(s, t, kToolCallEnd)))
      return std::string_view::npos;
    c += kParameterEnd.size();
  }
  return std::string_view::npos;
}

// A structural "</function>" at or after `from` (followed by "</tool_call>" or, with
// `final`, the end), or npos.
size_t find_function_end(std::string_view s, size_t from, bool final) {
  size_t c = from;
  while ((c = s.find(kFunctionEnd, c)) != std::string_view::npos) {
    const size_t t = skip_space(s, c + kFunctionEnd.size());
    if ((t == s.size() && final) || starts_at(s, t, kToolCallEnd)) return c;
    c += kFunctionEnd.size();
  }
  return std::string_view::npos;
}

bool valid_function_name(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name)
    if (std::string_view("{}<>\"' \t\n\r").find(c) != std::string_view::npos) return false;
  return true;
}

Snapshot parse_xml(std::string_view s, bool final, const std::vector<ToolFunction>& tools,
                   size_t from) {
  Snapshot snap;
  size_t q = find_xml_call(s, from, final, snap.content_end);
  while (q != std::string_view::npos) {
    const size_t name_end = s.find('>', q + kFunction.size());
    if (name_end == std::string_view::npos) break;
    PartialCall call;
    call.start = q;
    call.name = std::string(s.substr(q + kFunction.size(), name_end - q - kFunction.size()));
    const OJson props = tool_properties(tools, call.name);
    call.arguments = "{";
    bool first = true, closed = false, wait = false;
    size_t pos = name_end + 1;
    while (true) {
      pos = skip_space(s, pos);
      if (pos >= s.size()) break;
      if (starts_at(s, pos, kFunctionEnd)) {
        closed = true;
        pos += kFunctionEnd.size();
        break;
      }
      if (!final && (could_become(s, pos, kFunctionEnd) || could_become(s, pos, kParameter))) {
        wait = true;
        break;
      }
      if (!starts_at(s, pos, kParameter)) {
        // Stray text before </function>: the call ends at its structural close.
        const size_t e = find_function_end(s, pos, final);
        if (e == std::string_view::npos) {
          if (final) pos = s.size();
          wait = !final;
          break;
        }
        closed = true;
        pos = e + kFunctionEnd.size();
        break;
      }
      const size_t pname_end = s.find('>', pos + kParameter.size());
      if (pname_end == std::string_view::npos) {
        wait = !final;
        if (final) pos = s.size();
        break;
      }
      const std::string pname(
          s.substr(pos + kParameter.size(), pname_end - pos - kParameter.size()));
      size_t v = pname_end + 1;
      if (v < s.size() && s[v] == '\n') ++v;
      size_t vend = find_param_end(s, v, final);
      size_t next = vend == std::string_view::npos ? vend : vend + kParameterEnd.size();
      if (vend == std::string_view::npos) {
        if (!final) {
          wait = true;
          break;
        }
        // No closing tag: the value runs to the structural </function>, or the end.
        vend = find_function_end(s, v, true);
        if (vend == std::string_view::npos) vend = s.size();
        next = vend;
      }
      std::string value(s.substr(v, vend - v));
      if (!value.empty() && value.back() == '\n') value.pop_back();
      call.arguments += first ? "" : ", ";
      call.arguments += python_json_dumps(OJson(pname)) + ": " +
                        python_json_dumps(convert_param(value, pname, props));
      first = false;
      pos = next;
    }
    (void)wait;
    if (final) closed = true;
    if (closed) call.arguments += "}";
    call.closed = closed;
    if (valid_function_name(call.name)) snap.calls.push_back(std::move(call));
    if (!closed) break;
    pos = skip_space(s, pos);
    if (starts_at(s, pos, kToolCallEnd)) pos += kToolCallEnd.size();
    size_t ignored = 0;
    q = find_xml_call(s, pos, final, ignored);
  }
  return snap;
}

Snapshot parse_hermes(std::string_view s, bool final, size_t from) {
  Snapshot snap;
  size_t a = s.find(kToolCall, from);
  if (a == std::string_view::npos) {
    snap.content_end = std::max(from, final ? s.size() : s.size() - tail_overlap(s, kToolCall));
    return snap;
  }
  snap.content_end = a;
  while (a != std::string_view::npos) {
    const size_t body = a + kToolCall.size();
    const size_t e = s.find(kToolCallEnd, body);
    if (e == std::string_view::npos && !final) {
      // Open: the call once its name and the start of its arguments are read, the
      // arguments as far as they are settled (a tail that may begin </tool_call> is
      // not read: it may end the body).
      std::string_view open = s.substr(body);
      open.remove_suffix(tail_overlap(open, kToolCallEnd));
      HermesBodyPrefix p = hermes_body_prefix(open);
      if (!p.invalid && p.name && p.arguments)
        snap.calls.push_back(PartialCall{a, std::move(*p.name), std::move(*p.arguments), false});
      break;
    }
    const std::string_view text = s.substr(body, e == std::string_view::npos ? e : e - body);
    try {
      const OJson j = OJson::parse(trim(text));
      if (j.is_object() && j.contains("name") && j["name"].is_string() && j.contains("arguments")) {
        snap.calls.push_back(
            PartialCall{a, j["name"].get<std::string>(), python_json_dumps(j["arguments"]), true});
      }
    } catch (const OJson::exception&) {
    }
    if (e == std::string_view::npos) break;
    a = s.find(kToolCall, e + kToolCallEnd.size());
  }
  return snap;
}

// `from`: where the search for the first call may start (content already released
// holds no start of one).
Snapshot parse(ToolCallFormat format, std::string_view s, bool final,
               const std::vector<ToolFunction>& tools, size_t from) {
  Snapshot snap = format == ToolCallFormat::kHermes ? parse_hermes(s, final, from)
                                                    : parse_xml(s, final, tools, from);
  // No call after all: the whole text is content.
  if (final && snap.calls.empty()) snap.content_end = s.size();
  return snap;
}

}  // namespace

std::optional<ToolCallFormat> tool_call_format_from_name(std::string_view name) {
  if (name == "qwen3_coder" || name == "qwen3_xml") return ToolCallFormat::kQwen3Coder;
  if (name == "hermes") return ToolCallFormat::kHermes;
  return std::nullopt;
}

std::string make_tool_call_id() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char hex[25];
  const uint64_t a = rng(), b = rng();
  std::snprintf(hex, sizeof hex, "%016llx%08llx", static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b & 0xffffffffULL));
  return std::string("call_") + hex;
}

ExtractedToolCalls extract_tool_calls(ToolCallFormat format, std::string_view text,
                                      const std::vector<ToolFunction>& tools) {
  const Snapshot snap = parse(format, text, true, tools, 0);
  ExtractedToolCalls out;
  for (const PartialCall& c : snap.calls)
    out.calls.push_back(ToolCall{make_tool_call_id(), c.name, c.arguments});
  if (snap.content_end > 0 || out.calls.empty())
    out.content = std::string(text.substr(0, snap.content_end));
  return out;
}

StreamingToolParser::StreamingToolParser(ToolCallFormat format,
                                         const std::vector<ToolFunction>& tools)
    : format_(format), tools_(tools) {}

ToolStreamDelta StreamingToolParser::feed(std::string_view text, bool final) {
  ToolStreamDelta out;
  if (finished_) return out;
  buf_ += text;
  finished_ = final;
  const Snapshot snap = parse(format_, buf_, final, tools_, content_sent_);
  if (snap.content_end > content_sent_) {
    out.content = buf_.substr(content_sent_, snap.content_end - content_sent_);
    content_sent_ = snap.content_end;
  }
  // Calls are matched by where they start: a streamed call that the text later shows to
  // be malformed leaves the snapshot, and what follows it keeps its own index.
  for (const PartialCall& c : snap.calls) {
    auto it =
        std::find_if(sent_.begin(), sent_.end(), [&](const Sent& x) { return x.start == c.start; });
    if (it == sent_.end()) {
      sent_.push_back(Sent{c.start, make_tool_call_id(), c.arguments});
      out.calls.push_back(
          ToolCallDelta{int(sent_.size() - 1), sent_.back().id, c.name, c.arguments});
      continue;
    }
    // Only growth of what was sent goes out (a revision cannot be streamed).
    if (c.arguments.size() > it->arguments.size() && c.arguments.starts_with(it->arguments)) {
      out.calls.push_back(
          ToolCallDelta{int(it - sent_.begin()), "", "", c.arguments.substr(it->arguments.size())});
      it->arguments = c.arguments;
    }
  }
  return out;
}

}  // namespace vtllm::server
