// Grammar-constrained decoding cost on the real Qwen3 vocabulary, one thread:
// compile time per grammar and next-token mask time per step (p50 / p99)
// while replaying tokenized documents of each grammar's language, next to
// the targets of issue 20 (mask p50 <= 30 us, p99 <= 200 us; compile <= 5 ms).
//
//   build/bench/structured_bench .../tokenizer-qwen3/models/tokenizer.json [WORKLOAD [FRESH]]
//
// WORKLOAD runs that one only (its name as printed: json, tool, "schema L", ...) and FRESH
// sets how many freshly compiled grammars replay its first document (default 5): a
// profiler then sees mostly first visits.
//
// "cold" is the first document of a grammar (every automaton state and mask
// new); "all" is every step of every document with the CompiledGrammar shared
// between them, as the server shares one per schema; "warm" is the second half
// of the documents (the context-independent masks, whose number the grammar
// bounds, mostly built by then; full states still new); "fresh" is the first document's
// p99 on each of 5 freshly compiled grammars (median [min-max]), the steadier cold figure.
// "masks" is a digest of every mask of every step: a change to the mask code that keeps it
// keeps every mask. The "schema" workloads are OpenAI-style function parameters of three
// sizes through json_schema_text_to_gbnf as the server calls it (any whitespace); their
// compile time includes that conversion.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "structured/automaton.h"
#include "structured/json_gbnf.h"
#include "structured/json_schema.h"
#include "structured/matcher.h"
#include "structured/regex_grammar.h"
#include "structured/tool_grammar.h"
#include "text/tokenizer.h"

namespace {

using namespace vtllm::structured;
using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// A random JSON value shaped like tool-call arguments.
nlohmann::json random_value(std::mt19937& rng, int depth) {
  static const char* kWords[] = {"city",  "Paris", "units", "celsius",     "query", "São Paulo",
                                 "limit", "tags",  "note",  "line\nbreak", "id",    "\"quoted\""};
  const int kind = static_cast<int>(rng() % (depth > 2 ? 4 : 6));
  switch (kind) {
    case 0:
      return kWords[rng() % std::size(kWords)];
    case 1:
      return static_cast<int>(rng() % 2000) - 1000;
    case 2:
      return static_cast<double>(rng() % 100000) / 64.0;
    case 3:
      return rng() % 3 == 0 ? nlohmann::json(nullptr) : nlohmann::json(rng() % 2 == 0);
    case 4: {
      nlohmann::json a = nlohmann::json::array();
      for (int i = 0, n = static_cast<int>(rng() % 4); i < n; ++i) {
        a.push_back(random_value(rng, depth + 1));
      }
      return a;
    }
    default: {
      nlohmann::json o = nlohmann::json::object();
      for (int i = 0, n = 1 + static_cast<int>(rng() % 4); i < n; ++i) {
        o[kWords[rng() % std::size(kWords)]] = random_value(rng, depth + 1);
      }
      return o;
    }
  }
}

// The GBNF a JSON-Schema converter writes for one tool's arguments.
constexpr std::string_view kToolGbnf = R"gbnf(
root      ::= "{" ws "\"city\"" ws ":" ws string ( ws "," ws "\"days\"" ws ":" ws days )? ( ws "," ws "\"units\"" ws ":" ws units )? ws "}"
days      ::= "[" ws ( integer ( ws "," ws integer ){0,13} )? ws "]"
units     ::= "\"celsius\"" | "\"fahrenheit\""
integer   ::= "-"? ( "0" | [1-9] [0-9]{0,8} )
string    ::= "\"" ( [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) ){0,256} "\""
ws        ::= [ \t\n]{0,4}
)gbnf";

// OpenAI-style function parameters of three sizes: a 2-property call, a flat one with
// numbers, bounds and an enum, and a nested order with arrays of objects.
constexpr std::string_view kSmallSchema = R"({"type": "object", "properties": {
    "location": {"type": "string", "description": "City and country, e.g. Paris, France"},
    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
  "required": ["location"]})";
constexpr std::string_view kMediumSchema = R"({"type": "object", "properties": {
    "query": {"type": "string", "description": "Search terms"},
    "category": {"type": "string", "enum": ["books", "electronics", "garden", "toys", "music"]},
    "max_price": {"type": "number", "minimum": 0},
    "in_stock": {"type": "boolean"},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100},
    "sort": {"type": "string", "enum": ["relevance", "price_asc", "price_desc", "newest"]}},
  "required": ["query"]})";
constexpr std::string_view kLargeSchema = R"({"type": "object", "properties": {
    "customer": {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 100},
        "email": {"type": "string", "format": "email"},
        "address": {"type": "object", "properties": {
            "street": {"type": "string"}, "city": {"type": "string"},
            "postal_code": {"type": "string", "maxLength": 10},
            "country": {"type": "string", "enum": ["US", "DE", "FR", "JP", "BR"]}},
          "required": ["street", "city", "country"]}},
      "required": ["name", "email"]},
    "items": {"type": "array", "minItems": 1, "maxItems": 20, "items": {"type": "object",
        "properties": {
          "sku": {"type": "string"},
          "quantity": {"type": "integer", "minimum": 1, "maximum": 999},
          "unit_price": {"type": "number", "minimum": 0},
          "options": {"type": "array", "items": {"type": "string"}},
          "gift_wrap": {"type": "boolean"}},
        "required": ["sku", "quantity"]}},
    "shipping": {"type": "string", "enum": ["standard", "express", "overnight", "pickup"]},
    "coupon": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    "notes": {"type": "string", "maxLength": 500},
    "priority": {"type": "integer", "minimum": 1, "maximum": 5},
    "metadata": {"type": "object", "properties": {
        "source": {"type": "string"}, "campaign_id": {"type": "integer"}}}},
  "required": ["customer", "items", "shipping"]})";

// A random instance of the subset of JSON Schema the schemas above use (optional
// properties present about half the time, in schema order).
nlohmann::ordered_json random_instance(std::mt19937& rng, const nlohmann::ordered_json& s) {
  static const char* kText[] = {"Paris, France", "São Paulo",   "wireless headphones",
                                "A-1042",        "line\nbreak", "\"quoted\" text",
                                "Größe: 42",     "東京都"};
  static const char* kEmails[] = {"ana.silva@example.com", "j.doe@mail.example.org"};
  if (s.contains("enum")) return s["enum"][rng() % s["enum"].size()];
  if (s.contains("anyOf")) return random_instance(rng, s["anyOf"][rng() % s["anyOf"].size()]);
  const std::string type = s.value("type", "null");
  if (type == "object") {
    nlohmann::ordered_json o = nlohmann::ordered_json::object();
    const nlohmann::ordered_json required = s.value("required", nlohmann::ordered_json::array());
    for (const auto& [key, sub] : s["properties"].items()) {
      const bool req = std::any_of(required.begin(), required.end(), [&](const auto& r) {
        return r.template get<std::string>() == key;
      });
      if (req || rng() % 2) o[key] = random_instance(rng, sub);
    }
    return o;
  }
  if (type == "array") {
    nlohmann::ordered_json a = nlohmann::ordered_json::array();
    const auto lo = s.value("minItems", 0u), hi = std::min(s.value("maxItems", 4u), 4u);
    for (unsigned i = 0, n = lo + rng() % (hi - lo + 1); i < n; ++i) {
      a.push_back(random_instance(rng, s["items"]));
    }
    return a;
  }
  if (type == "string") {
    if (s.value("format", "") == "email") return kEmails[rng() % std::size(kEmails)];
    std::string t = kText[rng() % std::size(kText)];
    return t.substr(0, std::min<size_t>(t.size(), s.value("maxLength", 100u)));
  }
  if (type == "integer") {
    const int lo = s.value("minimum", -1000), hi = s.value("maximum", 100000);
    return lo + static_cast<int>(rng() % static_cast<unsigned>(hi - lo + 1));
  }
  if (type == "number") return static_cast<double>(rng() % 100000) / 100.0;
  if (type == "boolean") return rng() % 2 == 0;
  return nullptr;
}

// JSON as Python's json.dumps writes it (", " and ": "), what models mostly produce.
std::string spaced_dump(const nlohmann::ordered_json& v) {
  std::string out;
  if (v.is_object()) {
    for (const auto& [key, sub] : v.items()) {
      out +=
          (out.empty() ? "{" : ", ") + nlohmann::ordered_json(key).dump() + ": " + spaced_dump(sub);
    }
    return out.empty() ? "{}" : out + "}";
  }
  if (v.is_array()) {
    for (const auto& sub : v) out += (out.empty() ? "[" : ", ") + spaced_dump(sub);
    return out.empty() ? "[]" : out + "]";
  }
  return v.dump();
}

struct Workload {
  const char* name;
  std::string_view source;  // GBNF, regex or JSON Schema text
  enum Kind { kGbnf, kRegex, kSchema } kind;
  std::vector<std::string> docs;
};

Grammar front_end(const Workload& w) {
  switch (w.kind) {
    case Workload::kRegex:
      return regex_to_grammar(w.source);
    case Workload::kSchema:
      return parse_gbnf(
          json_schema_text_to_gbnf(w.source, JsonSchemaOptions{.any_whitespace = true}));
    default:
      return parse_gbnf(w.source);
  }
}

// Per-step mask times of one replay of `doc`, and the masks' digest folded into `digest`;
// false when the grammar rejects a token of it.
bool replay(const std::shared_ptr<const CompiledGrammar>& g, std::span<const TokenId> ids,
            std::vector<uint32_t>& mask, std::vector<double>& us, uint64_t& digest) {
  Matcher m(g);
  for (TokenId id : ids) {
    const auto t0 = Clock::now();
    m.fill_next_token_bitmask(mask);
    us.push_back(us_since(t0));
    for (uint32_t word : mask) digest = (digest ^ word) * 1099511628211ull;
    if (!m.accept_token(id)) return false;
  }
  return true;
}

void run(const Workload& w, const vtllm::text::Tokenizer& tok, const TokenVocab& vocab,
         TokenId stop, int fresh_grammars) {
  std::vector<std::vector<TokenId>> docs;
  for (const std::string& d : w.docs) {
    docs.push_back(tok.encode(d, false));
    docs.back().push_back(stop);
  }
  std::vector<uint32_t> mask(vocab.mask_words());
  std::vector<double> compile_us, fresh;
  std::shared_ptr<const CompiledGrammar> g;
  for (int i = 0; i < std::max(20, fresh_grammars); ++i) {
    const auto t0 = Clock::now();  // front end + automaton, as a request pays it
    g = CompiledGrammar::compile(front_end(w), vocab);
    compile_us.push_back(us_since(t0));
    if (i >= fresh_grammars) continue;
    std::vector<double> us;
    uint64_t unused = 0;
    replay(g, docs[0], mask, us, unused);
    fresh.push_back(percentile(us, 0.99));
  }
  g = CompiledGrammar::compile(front_end(w), vocab);
  std::vector<double> cold, all, warm;
  size_t rejected = 0;
  uint64_t digest = 1469598103934665603ull;  // FNV-1a over the mask words
  for (size_t d = 0; d < docs.size(); ++d) {
    std::vector<double> us;
    if (!replay(g, docs[d], mask, us, digest)) ++rejected;
    all.insert(all.end(), us.begin(), us.end());
    if (d == 0) cold = us;
    if (d >= docs.size() / 2) warm.insert(warm.end(), us.begin(), us.end());
  }
  std::printf(
      "%-10s compile p50 %7.1f us (target <= 5000) | mask cold p50 %7.1f p99 %8.1f us, fresh "
      "p99 %7.1f [%.1f-%.1f] | all p50 %6.1f p99 %7.1f us | warm p50 %6.1f p99 %7.1f us "
      "(targets 30 / 200) | %zu steps, %zu docs, %zu states, %zu local masks, masks %016llx%s\n",
      w.name, percentile(compile_us, 0.5), percentile(cold, 0.5), percentile(cold, 0.99),
      percentile(fresh, 0.5), percentile(fresh, 0), percentile(fresh, 1), percentile(all, 0.5),
      percentile(all, 0.99), percentile(warm, 0.5), percentile(warm, 0.99), all.size(),
      w.docs.size(), g->automaton().num_states(), g->automaton().num_local_masks(),
      static_cast<unsigned long long>(digest), rejected ? "  REJECTED A DOCUMENT" : "");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: structured_bench QWEN3_TOKENIZER_JSON [WORKLOAD [FRESH]]\n");
    return 2;
  }
  const char* path = argv[1];
  const std::string only = argc > 2 ? argv[2] : "";
  const int fresh_grammars = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
  try {
    const vtllm::text::Tokenizer tok = vtllm::text::Tokenizer::from_file(path);
    const TokenId stop = *tok.token_to_id("<|im_end|>");
    auto t0 = Clock::now();
    const TokenVocab vocab = TokenVocab::from_tokenizer(tok, 151936, {stop});
    std::printf("vocab: %zu ids, %zu trie nodes, built in %.1f ms\n", vocab.size(),
                vocab.trie().size(), us_since(t0) / 1000);

    std::mt19937 rng(1);
    std::vector<Workload> loads;
    Workload json{"json", kJsonGbnf, Workload::kGbnf, {}};
    for (int i = 0; i < 200; ++i) {
      nlohmann::json doc = nlohmann::json::object();
      doc["name"] = "tool";
      doc["arguments"] = random_value(rng, 0);
      json.docs.push_back(doc.dump(i % 3 == 0 ? 2 : -1));
    }
    loads.push_back(std::move(json));
    Workload tool{"tool", kToolGbnf, Workload::kGbnf, {}};
    for (int i = 0; i < 60; ++i) {
      nlohmann::json doc = nlohmann::json::object();
      doc["city"] = i % 2 ? "São Paulo" : "Reykjavík, \"IS\"";
      if (i % 3) doc["days"] = std::vector<int>(rng() % 8, static_cast<int>(rng() % 30));
      if (i % 4) doc["units"] = i % 8 < 4 ? "celsius" : "fahrenheit";
      tool.docs.push_back(doc.dump(i % 3 == 0 ? 1 : -1));
    }
    loads.push_back(std::move(tool));
    const std::pair<const char*, std::string_view> schemas[] = {
        {"schema S", kSmallSchema}, {"schema M", kMediumSchema}, {"schema L", kLargeSchema}};
    for (const auto& [name, text] : schemas) {
      Workload w{name, text, Workload::kSchema, {}};
      const auto schema = nlohmann::ordered_json::parse(text);
      std::mt19937 schema_rng(2);  // its own: the other workloads' documents stay as they were
      for (int i = 0; i < 60; ++i) {
        const nlohmann::ordered_json doc = random_instance(schema_rng, schema);
        w.docs.push_back(i % 3 == 0 ? spaced_dump(doc) : doc.dump(i % 3 == 1 ? -1 : 2));
      }
      loads.push_back(std::move(w));
    }
    constexpr std::string_view kDate = R"(\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2})?Z?)?)";
    Workload re{"regex", kDate, Workload::kRegex, {}};
    for (int i = 0; i < 60; ++i) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%04lu-%02lu-%02luT%02lu:%02lu:%02luZ", 1900 + rng() % 200,
                    1 + rng() % 12, 1 + rng() % 28, rng() % 24, rng() % 60, rng() % 60);
      re.docs.push_back(i % 2 ? std::string(buf, 10) : std::string(buf));
    }
    loads.push_back(std::move(re));
    // Qwen3.5's XML tool call (tool_grammar.h), raw-text values over several lines.
    const nlohmann::ordered_json params = nlohmann::ordered_json::parse(R"({"type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"},
                       "mode": {"enum": ["w", "a"]}}, "required": ["path", "content"]})");
    const ToolSpec spec{"write_file", params};
    static const std::string xml_gbnf = tool_call_gbnf(std::span(&spec, 1), ToolGrammarOptions{});
    Workload xml{"tool xml", xml_gbnf, Workload::kGbnf, {}};
    static const char* kLines[] = {"def area(r):",
                                   "    return 3.14159 * r * r  # \"pi\"",
                                   "Ein Satz mit Umlauten: grün, Größe.",
                                   "x = {'a': [1, 2]}",
                                   "print(f\"{x} <= 3\")",
                                   ""};
    for (int i = 0; i < 60; ++i) {
      std::string content;
      for (int n = 1 + int(rng() % 6); n > 0; --n)
        content += std::string(kLines[rng() % std::size(kLines)]) + (n > 1 ? "\n" : "");
      std::string doc = "<tool_call>\n<function=write_file>\n<parameter=path>\nsrc/m" +
                        std::to_string(i) + ".py\n</parameter>\n<parameter=content>\n" + content +
                        "\n</parameter>\n";
      if (i % 2)
        doc += std::string("<parameter=mode>\n") + (i % 4 == 1 ? "w" : "a") + "\n</parameter>\n";
      xml.docs.push_back(doc + "</function>\n</tool_call>");
    }
    loads.push_back(std::move(xml));
    for (const Workload& w : loads) {
      if (only.empty() || only == w.name) run(w, tok, vocab, stop, fresh_grammars);
    }
  } catch (const vtllm::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
