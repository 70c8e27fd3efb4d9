// JSON Schema -> GBNF: one rule per schema node (deduplicated by body), fixed rules for the
// generic JSON pieces, $ref targets as named rules so recursion closes.
#include "structured/json_schema.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "structured/json_schema_gbnf.h"

namespace vtllm::structured {
namespace {

using OJson = nlohmann::ordered_json;

// Keywords that only annotate (or hold definitions): never constrain the value.
const std::set<std::string> kAnnotations = {
    "$schema",    "$id",      "$comment",      "$defs",           "definitions",
    "$anchor",    "title",    "description",   "default",         "examples",
    "deprecated", "readOnly", "writeOnly",     "contentEncoding", "contentMediaType",
    "strict",     "nullable", "discriminator", "x-order"};

// Keywords the grammar cannot express (or that this compiler does not implement).
const std::set<std::string> kUnsupported = {"multipleOf",
                                            "not",
                                            "if",
                                            "then",
                                            "else",
                                            "patternProperties",
                                            "propertyNames",
                                            "contains",
                                            "minContains",
                                            "maxContains",
                                            "minProperties",
                                            "maxProperties",
                                            "dependentRequired",
                                            "dependentSchemas",
                                            "dependencies",
                                            "unevaluatedProperties",
                                            "unevaluatedItems",
                                            "$dynamicRef",
                                            "$recursiveRef",
                                            "$dynamicAnchor",
                                            "$recursiveAnchor"};

const std::set<std::string> kFormats = {"date",  "time", "date-time", "uuid",
                                        "email", "ipv4", "uri"};

std::string escape_pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

[[noreturn]] void fail(const std::string& ptr, const std::string& what) {
  VT_THROW("JSON schema: ", what, " at #", ptr);
}

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

// A numeric bound read from the schema: value and whether it is exclusive.
struct Bound {
  long double value;
  bool exclusive;
};

// The tighter of minimum / exclusiveMinimum (or maximum / exclusiveMaximum), both spellings.
std::optional<Bound> read_bound(const OJson& s, const std::string& ptr, bool lower) {
  const char* inc = lower ? "minimum" : "maximum";
  const char* exc = lower ? "exclusiveMinimum" : "exclusiveMaximum";
  std::optional<Bound> b;
  auto number = [&](const char* key) {
    const OJson& v = s[key];
    if (!v.is_number()) fail(ptr + "/" + key, "expected a number");
    return v.is_number_integer()    ? static_cast<long double>(v.get<int64_t>())
           : v.is_number_unsigned() ? static_cast<long double>(v.get<uint64_t>())
                                    : static_cast<long double>(v.get<double>());
  };
  if (s.contains(inc)) {
    bool draft4_exclusive = s.contains(exc) && s[exc].is_boolean() && s[exc].get<bool>();
    b = Bound{number(inc), draft4_exclusive};
  }
  if (s.contains(exc) && !s[exc].is_boolean()) {
    Bound e{number(exc), true};
    if (!b || (lower ? e.value >= b->value : e.value <= b->value)) b = e;
  }
  return b;
}

constexpr long double kMaxBound = 9.0e18L;

// ---- the compiler ---------------------------------------------------------------------------

}  // namespace

class SchemaRuleSet::Impl {
 public:
  explicit Impl(const JsonSchemaOptions& options) : opt_(options) {}

  // A rule matching `schema` (the root its `$ref`s point into), named after `prefix`.
  std::string rule(const OJson& schema, const std::string& prefix, const OJson* root) {
    root_ = root ? root : &schema;
    prefix_ = prefix;
    ++root_id_;
    return visit(schema, "", 0);
  }

  std::string raw_string(const OJson& s, const std::string& prefix, const std::string& length_char,
                         const std::string& unconstrained) {
    prefix_ = prefix;
    if (s.contains("format") && s["format"].is_string() &&
        kFormats.count(s["format"].get<std::string>())) {
      return format_rule(s["format"].get<std::string>());
    }
    if (s.contains("pattern") && s["pattern"].is_string()) {
      std::string body;
      try {
        body = regex_to_gbnf(s["pattern"].get<std::string>(), false);
      } catch (const Error& e) {
        fail("/pattern", e.what());
      }
      return add_rule("pattern", body);
    }
    if (s.contains("minLength") || s.contains("maxLength")) {
      auto len = [&](const char* key, int dflt) {
        if (!s.contains(key)) return dflt;
        const OJson& v = s[key];
        if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > gbnf::kMaxRepeat) {
          fail(std::string("/") + key, "expected a non-negative integer");
        }
        return static_cast<int>(v.get<int64_t>());
      };
      int min = len("minLength", 0), max = len("maxLength", -1);
      if (max >= 0 && min > max) fail("", "minLength > maxLength");
      return add_rule("text", gbnf::repeat(length_char, min, max));
    }
    return unconstrained;
  }

  // `name ::= body` under a fresh name from `hint` (or the rule already holding `body`).
  std::string add(const std::string& hint, const std::string& body) {
    prefix_.clear();
    return add_rule(hint, body);
  }

  void replace(const std::string& name, const std::string& body) {
    for (auto& [n, b] : rules_) {
      if (n == name) {
        by_body_.erase(b);
        b = body;
        by_body_[body] = name;
        return;
      }
    }
    VT_THROW("json_schema: no rule ", name);
  }

  // The rule definitions made so far, each on its own line, after `root ::= top`.
  std::string text(const std::string& top) const {
    std::string out = "root ::= " + top + "\n";
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    return out;
  }

 private:
  // A rule with this body (reused when an identical body exists), named after `hint`.
  std::string add_rule(const std::string& hint, const std::string& body) {
    if (auto it = by_body_.find(body); it != by_body_.end()) return it->second;
    std::string name = unique_name(hint);
    rules_.emplace_back(name, body);
    by_body_[body] = name;
    return name;
  }

  std::string unique_name(const std::string& hint) {
    std::string base;
    for (char c : prefix_ + "-" + hint) {
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
      base += ok ? c : '-';
    }
    while (base.find("--") != std::string::npos) base.replace(base.find("--"), 2, "-");
    while (!base.empty() && base.front() == '-') base.erase(0, 1);
    while (!base.empty() && base.back() == '-') base.pop_back();
    if (base.size() > 40) base = base.substr(base.size() - 40);
    while (!base.empty() && base.front() == '-') base.erase(0, 1);
    if (base.empty() || base == "root") base = "s";
    std::string name = base;
    for (int k = 2; names_.count(name) || name.rfind("json-", 0) == 0 || name == "ws"; ++k) {
      name = str_cat(base, "-", k);
    }
    names_.insert(name);
    return name;
  }

  // The fixed rules of generic JSON, defined on first use.
  std::string prim(const std::string& name) {
    if (prims_.count(name)) return name;
    prims_.insert(name);
    std::string body;
    if (name == "ws") {
      body = opt_.any_whitespace ? "[ \\t\\n]*" : "\" \"?";
    } else if (name == "json-char") {
      body = "[^\"\\\\\\x00-\\x1F] | " + prim("json-escape");
    } else if (name == "json-escape") {
      body = std::string(gbnf::kJsonEscape);
    } else if (name == "json-string") {
      body = "\"\\\"\" " + prim("json-char") + "* \"\\\"\"";
    } else if (name == "json-integer") {
      body = "\"0\" | \"-\"? [1-9] [0-9]*";
    } else if (name == "json-number") {
      body = "\"-\"? ( \"0\" | [1-9] [0-9]* ) ( \".\" [0-9]+ )? ( [eE] [-+]? [0-9]+ )?";
    } else if (name == "json-boolean") {
      body = "\"true\" | \"false\"";
    } else if (name == "json-null") {
      body = "\"null\"";
    } else if (name == "json-value") {
      body = prim("json-object") + " | " + prim("json-array") + " | " + prim("json-string") +
             " | " + prim("json-number") + " | " + prim("json-boolean") + " | " + prim("json-null");
    } else if (name == "json-object") {
      std::string ws = prim("ws");
      std::string kv = prim("json-string") + " " + ws + " \":\" " + ws + " " + prim("json-value");
      body = "\"{\" " + ws + " ( " + kv + " " + ws + " ( \",\" " + ws + " " + kv + " " + ws +
             " )* )? \"}\"";
    } else if (name == "json-array") {
      std::string ws = prim("ws");
      std::string v = prim("json-value");
      body = "\"[\" " + ws + " ( " + v + " " + ws + " ( \",\" " + ws + " " + v + " " + ws +
             " )* )? \"]\"";
    } else {
      VT_THROW("json_schema: no primitive rule ", name);
    }
    rules_.emplace_back(name, body);
    return name;
  }

  // The rule for schema `s` at `ptr`. `via_ref`: reached through a $ref rule, which closes a
  // recursion back into a schema still being visited.
  std::string visit(const OJson& s, const std::string& ptr, int depth, bool via_ref = false) {
    if (depth > 64) fail(ptr, "schema nests or refers too deeply (over 64 levels)");
    if (s.is_boolean()) {
      if (s.get<bool>()) return prim("json-value");
      fail(ptr, "schema 'false' matches nothing");
    }
    if (!s.is_object()) fail(ptr, "a schema must be an object or a boolean");
    std::string key = str_cat(root_id_, ":", s.dump());
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    // Recursion that does not pass through a $ref rule (a branch merged with its own
    // ancestor) would expand forever; the budget bounds the work on any schema.
    if (s.contains("$ref") && !has_constraints(s, {"$ref"})) {
      std::string name = visit_object(s, ptr, depth);  // ref_rule closes its own recursion
      memo_[key] = name;
      return name;
    }
    if (active_.count(key)) {
      if (!via_ref) fail(ptr, "recursion through allOf/anyOf merging is unsupported");
      return visit_object(s, ptr, depth);
    }
    if (++visits_ > kMaxVisits) fail(ptr, "schema too large to compile");
    active_.insert(key);
    std::string name = visit_object(s, ptr, depth);
    active_.erase(key);
    memo_[key] = name;
    return name;
  }

  // Keys of `s` that constrain the value (not annotations, not the listed ones).
  static bool has_constraints(const OJson& s, const std::set<std::string>& except) {
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (!kAnnotations.count(it.key()) && !except.count(it.key())) return true;
    }
    return false;
  }

  std::string visit_object(const OJson& s, const std::string& ptr, int depth) {
    for (auto it = s.begin(); it != s.end(); ++it) {
      const std::string& k = it.key();
      if (kUnsupported.count(k))
        fail(ptr + "/" + escape_pointer_token(k), "unsupported keyword '" + k + "'");
      if (k == "uniqueItems" && it.value() == true) {
        fail(ptr + "/uniqueItems", "unsupported keyword 'uniqueItems'");
      }
    }
    if (s.contains("$ref")) {
      if (!has_constraints(s, {"$ref"})) return ref_rule(s["$ref"], ptr + "/$ref", depth);
      OJson rest = s;
      rest.erase("$ref");
      OJson merged = {{"allOf", OJson::array({OJson{{"$ref", s["$ref"]}}, rest})}};
      return visit(merged, ptr, depth + 1);
    }
    if (s.contains("allOf")) return visit(merge_all_of(s, ptr, depth), ptr, depth + 1);
    for (const char* kw : {"anyOf", "oneOf"}) {
      if (!s.contains(kw)) continue;
      const OJson& subs = s[kw];
      std::string p = ptr + "/" + kw;
      if (!subs.is_array() || subs.empty())
        fail(p, std::string("'") + kw + "' must be a non-empty array");
      OJson base = s;
      base.erase(kw);
      bool merge = has_constraints(base, {});
      std::vector<std::string> alts;
      for (size_t i = 0; i < subs.size(); ++i) {
        std::string pi = str_cat(p, "/", i);
        if (merge) {
          OJson m = {{"allOf", OJson::array({base, subs[i]})}};
          alts.push_back(visit(m, pi, depth + 1));
        } else {
          alts.push_back(visit(subs[i], pi, depth + 1));
        }
      }
      return add_rule(ptr, join(alts, " | "));
    }
    std::optional<std::set<std::string>> types = read_types(s, ptr);
    if (s.contains("const")) return add_rule(ptr, gbnf::literal(s["const"].dump()));
    if (s.contains("enum")) {
      const OJson& e = s["enum"];
      if (!e.is_array() || e.empty()) fail(ptr + "/enum", "'enum' must be a non-empty array");
      std::vector<std::string> alts;
      for (const OJson& v : e) {
        if (!types || type_allows(*types, v)) alts.push_back(gbnf::literal(v.dump()));
      }
      if (alts.empty()) fail(ptr + "/enum", "no 'enum' value has the schema's type");
      return add_rule(ptr, join(alts, " | "));
    }
    if (!types) types = infer_types(s);
    if (!types) return prim("json-value");
    std::vector<std::string> alts;
    for (const std::string& t : *types) alts.push_back(visit_type(s, t, ptr, depth));
    if (alts.size() == 1) return alts[0];
    return add_rule(ptr, join(alts, " | "));
  }

  static bool type_allows(const std::set<std::string>& types, const OJson& v) {
    if (v.is_null()) return types.count("null") > 0;
    if (v.is_boolean()) return types.count("boolean") > 0;
    if (v.is_string()) return types.count("string") > 0;
    if (v.is_array()) return types.count("array") > 0;
    if (v.is_object()) return types.count("object") > 0;
    if (types.count("number")) return true;
    if (!types.count("integer")) return false;
    return v.is_number_integer() || v.is_number_unsigned() ||
           std::floor(v.get<double>()) == v.get<double>();
  }

  static std::optional<std::set<std::string>> read_types(const OJson& s, const std::string& ptr) {
    if (!s.contains("type")) return std::nullopt;
    static const std::set<std::string> known = {"null",   "boolean", "integer", "number",
                                                "string", "array",   "object"};
    std::set<std::string> out;
    auto add = [&](const OJson& t) {
      if (!t.is_string() || !known.count(t.get<std::string>())) {
        fail(ptr + "/type", "unknown type " + t.dump());
      }
      out.insert(t.get<std::string>());
    };
    const OJson& t = s["type"];
    if (t.is_array()) {
      for (const OJson& x : t) add(x);
    } else {
      add(t);
    }
    if (out.empty()) fail(ptr + "/type", "empty type list");
    if (out.count("number")) out.erase("integer");
    return out;
  }

  // Whether `s` is {"type": `type`} plus only the keys xgrammar ignores when it matches a
  // schema to its basic rules (title, description, default, examples, deprecated,
  // readOnly, writeOnly, $comment, $schema): the object and array schemas its strict mode
  // leaves open.
  static bool bare(const OJson& s, const char* type) {
    static const std::set<std::string> kIgnored = {"title",     "default",    "description",
                                                   "examples",  "deprecated", "readOnly",
                                                   "writeOnly", "$comment",   "$schema"};
    if (!s.is_object() || !s.contains("type") || s["type"] != type) return false;
    for (auto it = s.begin(); it != s.end(); ++it)
      if (it.key() != "type" && !kIgnored.count(it.key())) return false;
    return true;
  }

  // The type a schema without `type` implies through its keywords, if any.
  static std::optional<std::set<std::string>> infer_types(const OJson& s) {
    for (const char* k : {"properties", "additionalProperties", "required"}) {
      if (s.contains(k)) return std::set<std::string>{"object"};
    }
    for (const char* k : {"items", "prefixItems", "minItems", "maxItems", "additionalItems"}) {
      if (s.contains(k)) return std::set<std::string>{"array"};
    }
    for (const char* k : {"pattern", "format", "minLength", "maxLength"}) {
      if (s.contains(k)) return std::set<std::string>{"string"};
    }
    for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
      if (s.contains(k)) return std::set<std::string>{"number"};
    }
    return std::nullopt;
  }

  std::string visit_type(const OJson& s, const std::string& t, const std::string& ptr, int depth) {
    if (t == "null") return prim("json-null");
    if (t == "boolean") return prim("json-boolean");
    if (t == "integer") return integer(s, ptr);
    if (t == "number") return number(s, ptr);
    if (t == "string") return string(s, ptr);
    if (t == "array") return array(s, ptr, depth);
    return object(s, ptr, depth);
  }

  std::string integer(const OJson& s, const std::string& ptr) {
    std::optional<Bound> lo = read_bound(s, ptr, true), hi = read_bound(s, ptr, false);
    if (!lo && !hi) return prim("json-integer");
    std::optional<int64_t> ilo, ihi;
    if (lo) {
      if (std::fabs(lo->value) > kMaxBound) fail(ptr, "integer bound out of range");
      ilo = static_cast<int64_t>(lo->exclusive ? std::floor(lo->value) + 1 : std::ceil(lo->value));
    }
    if (hi) {
      if (std::fabs(hi->value) > kMaxBound) fail(ptr, "integer bound out of range");
      ihi = static_cast<int64_t>(hi->exclusive ? std::ceil(hi->value) - 1 : std::floor(hi->value));
    }
    if (ilo && ihi && *ilo > *ihi) fail(ptr, "integer bounds admit no value");
    return add_rule(ptr, gbnf::integer_range(ilo, ihi));
  }

  std::string number(const OJson& s, const std::string& ptr) {
    std::optional<Bound> lo = read_bound(s, ptr, true), hi = read_bound(s, ptr, false);
    if (!lo && !hi) return prim("json-number");
    for (const auto& b : {lo, hi}) {
      if (b && (std::floor(b->value) != b->value || std::fabs(b->value) > kMaxBound)) {
        fail(ptr, "unsupported non-integer (or huge) bound on a number");
      }
    }
    std::vector<std::string> alts;
    auto i64 = [](long double v) { return static_cast<int64_t>(v); };
    // x >= 0, written without a sign.
    if (!hi || hi->value > 0 || (hi->value == 0 && !hi->exclusive)) {
      uint64_t ml = lo && lo->value > 0 ? static_cast<uint64_t>(i64(lo->value)) : 0;
      bool ml_excl = lo && lo->value >= 0 && lo->exclusive;
      std::optional<uint64_t> mh;
      if (hi) mh = static_cast<uint64_t>(i64(hi->value));
      if (auto m = gbnf::magnitude_range(ml, ml_excl, mh, hi && hi->exclusive)) alts.push_back(*m);
    }
    // x < 0: "-" and a magnitude above 0.
    if (!lo || lo->value < 0) {
      uint64_t ml = 0;
      bool ml_excl = true;
      if (hi && hi->value < 0)
        ml = gbnf::magnitude_of_negative(i64(hi->value)), ml_excl = hi->exclusive;
      std::optional<uint64_t> mh;
      if (lo) mh = gbnf::magnitude_of_negative(i64(lo->value));
      if (auto m = gbnf::magnitude_range(ml, ml_excl, mh, lo && lo->exclusive)) {
        alts.push_back("\"-\" " + *m);
      }
    }
    if (alts.empty()) fail(ptr, "number bounds admit no value");
    return add_rule(ptr, join(alts, " | "));
  }

  std::string string(const OJson& s, const std::string& ptr) {
    const std::string q = "\"\\\"\"";
    bool lengths = s.contains("minLength") || s.contains("maxLength");
    auto len = [&](const char* key, int dflt) {
      if (!s.contains(key)) return dflt;
      const OJson& v = s[key];
      if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
        fail(ptr + "/" + key, "expected a non-negative integer");
      }
      if (v.get<uint64_t>() > static_cast<uint64_t>(gbnf::kMaxRepeat)) {
        fail(ptr + "/" + key, str_cat("length bound above ", gbnf::kMaxRepeat));
      }
      return static_cast<int>(v.get<uint64_t>());
    };
    if (s.contains("format") && s["format"].is_string() &&
        kFormats.count(s["format"].get<std::string>())) {
      if (lengths || s.contains("pattern")) {
        fail(ptr + "/format", "'format' together with 'pattern' or a length is unsupported");
      }
      return add_rule(ptr, q + " " + format_rule(s["format"].get<std::string>()) + " " + q);
    }
    if (s.contains("pattern")) {
      if (!s["pattern"].is_string()) fail(ptr + "/pattern", "expected a string");
      if (lengths) fail(ptr + "/pattern", "'pattern' together with a length is unsupported");
      std::string body;
      try {
        body = regex_to_gbnf(s["pattern"].get<std::string>(), true);
      } catch (const Error& e) {
        fail(ptr + "/pattern", e.what());
      }
      return add_rule(ptr, q + " " + body + " " + q);
    }
    if (!lengths) return prim("json-string");
    int min = len("minLength", 0), max = len("maxLength", -1);
    if (max >= 0 && min > max) fail(ptr, "minLength > maxLength");
    return add_rule(ptr, q + " " + gbnf::repeat(prim("json-char"), min, max) + " " + q);
  }

  std::string format_rule(const std::string& f) { return add_rule(f, gbnf::format_expr(f)); }

  std::string array(const OJson& s, const std::string& ptr, int depth) {
    std::vector<std::string> prefix;
    const OJson* items = nullptr;
    std::string items_ptr;
    OJson any = true, none = false;
    if (s.contains("prefixItems") || (s.contains("items") && s["items"].is_array())) {
      const char* pk = s.contains("prefixItems") ? "prefixItems" : "items";
      const OJson& p = s[pk];
      if (!p.is_array()) fail(ptr + "/" + pk, "expected an array of schemas");
      for (size_t i = 0; i < p.size(); ++i) {
        prefix.push_back(visit(p[i], str_cat(ptr, "/", pk, "/", i), depth + 1));
      }
      const char* rest = s.contains("prefixItems") ? "items" : "additionalItems";
      items = s.contains(rest) ? &s[rest] : opt_.strict ? &none : &any;
      items_ptr = ptr + "/" + rest;
    } else {
      // Strict mode: no items where none are given, but in the bare {"type": "array"}.
      items = s.contains("items") ? &s["items"] : opt_.strict && !bare(s, "array") ? &none : &any;
      items_ptr = ptr + "/items";
    }
    bool more = !(items->is_boolean() && !items->get<bool>());
    std::string item = more ? visit(*items, items_ptr, depth + 1) : "";
    auto count = [&](const char* key, int dflt) {
      if (!s.contains(key)) return dflt;
      const OJson& v = s[key];
      if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
        fail(ptr + "/" + key, "expected a non-negative integer");
      }
      if (v.get<uint64_t>() > static_cast<uint64_t>(gbnf::kMaxRepeat)) {
        fail(ptr + "/" + key, str_cat("item count above ", gbnf::kMaxRepeat));
      }
      return static_cast<int>(v.get<uint64_t>());
    };
    int k = static_cast<int>(prefix.size());
    int min = count("minItems", 0), max = count("maxItems", -1);
    if (!more) max = max < 0 ? k : std::min(max, k);
    if (max >= 0 && min > max) fail(ptr, "array bounds admit no value");
    std::string ws = prim("ws");
    std::string sep = "\",\" " + ws + " ";
    // rest(i): the elements from index i on (a separator before each but the first).
    std::function<std::string(int)> rest = [&](int i) -> std::string {
      std::string pre = i == 0 ? "" : sep;
      if (max >= 0 && i >= max) return "";
      if (i < k) {
        std::string body = pre + prefix[i] + " " + ws + " " + rest(i + 1);
        return i < min ? body : "( " + body + " )?";
      }
      if (!more) return "";
      int rmin = std::max(0, min - i), rmax = max < 0 ? -1 : max - i;
      std::string one = item + " " + ws;
      if (i > 0) return gbnf::repeat("( " + sep + one + " )", rmin, rmax);
      std::string inner =
          one + " " +
          gbnf::repeat("( " + sep + one + " )", std::max(0, rmin - 1), rmax < 0 ? -1 : rmax - 1);
      return rmin >= 1 ? inner : "( " + inner + " )?";
    };
    return add_rule(ptr.empty() ? "array" : ptr, "\"[\" " + ws + " " + rest(0) + " \"]\"");
  }

  std::string object(const OJson& s, const std::string& ptr, int depth) {
    std::string ws = prim("ws");
    std::string sep = "\",\" " + ws + " ";
    std::vector<std::string> keys, items;
    std::vector<bool> req;
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) fail(ptr + "/required", "expected an array of names");
      for (const OJson& r : s["required"]) {
        if (!r.is_string()) fail(ptr + "/required", "expected an array of names");
        required.insert(r.get<std::string>());
      }
    }
    if (s.contains("properties")) {
      const OJson& props = s["properties"];
      if (!props.is_object()) fail(ptr + "/properties", "expected an object");
      for (auto it = props.begin(); it != props.end(); ++it) {
        std::string p = ptr + "/properties/" + escape_pointer_token(it.key());
        if (it.value().is_boolean() && !it.value().get<bool>()) {
          if (required.count(it.key())) fail(p, "required property has schema false");
          continue;
        }
        std::string value = visit(it.value(), p, depth + 1);
        keys.push_back(it.key());
        items.push_back(gbnf::literal(OJson(it.key()).dump()) + " " + ws + " \":\" " + ws + " " +
                        value + " " + ws);
        req.push_back(required.count(it.key()) > 0);
      }
    }
    for (const std::string& r : required) {
      if (std::find(keys.begin(), keys.end(), r) == keys.end()) {
        fail(ptr + "/required", "required property '" + r + "' is not in 'properties'");
      }
    }
    std::string extra;  // one additional member, or empty when none is allowed
    // Strict mode closes every object schema but the bare {"type": "object"} (any object).
    OJson addl = s.contains("additionalProperties") ? s["additionalProperties"]
                                                    : OJson(!opt_.strict || bare(s, "object"));
    if (!(addl.is_boolean() && !addl.get<bool>())) {
      std::string value = visit(addl, ptr + "/additionalProperties", depth + 1);
      extra = other_key(keys, ptr) + " " + ws + " \":\" " + ws + " " + value + " " + ws;
    }
    size_t n = items.size();
    // tail(i): members from i on after at least one was written.
    std::vector<std::string> tails(n + 1);
    tails[n] = extra.empty() ? "" : "( " + sep + extra + " )*";
    for (size_t i = n; i-- > 0;) {
      std::string piece = req[i] ? sep + items[i] : "( " + sep + items[i] + " )?";
      std::string t = piece + " " + tails[i + 1];
      tails[i] = (n > 6 && t.size() > 200) ? add_rule(ptr + "-tail", t) : t;
    }
    // first(i): members from i on with none written yet.
    std::string first = extra.empty() ? "" : "( " + extra + " " + tails[n] + " )?";
    for (size_t i = n; i-- > 0;) {
      std::string with = items[i] + " " + tails[i + 1];
      if (req[i]) {
        first = with;
      } else {
        first = first.empty() ? "( " + with + " )?" : "( " + with + " | " + first + " )";
      }
    }
    return add_rule(ptr.empty() ? "object" : ptr, "\"{\" " + ws + " " + first + " \"}\"");
  }

  // A JSON string key other than any of `keys` (compared on raw characters; a key spelled
  // with escapes is taken as different). Keys holding '"', '\' or controls disable the check.
  std::string other_key(const std::vector<std::string>& keys, const std::string& ptr) {
    if (keys.empty()) return prim("json-string");
    // A trie over the keys' code points; one rule per node.
    struct Node {
      std::map<uint32_t, int> next;
      bool end = false;
    };
    std::vector<Node> trie(1);
    for (const std::string& k : keys) {
      int at = 0;
      for (uint32_t c : gbnf::code_points(k)) {
        if (c < 0x20 || c == '"' || c == '\\') return prim("json-string");
        auto it = trie[at].next.find(c);
        if (it == trie[at].next.end()) {
          trie[at].next[c] = static_cast<int>(trie.size());
          at = static_cast<int>(trie.size());
          trie.emplace_back();
        } else {
          at = it->second;
        }
      }
      trie[at].end = true;
    }
    std::string any = prim("json-char") + "*";
    std::vector<std::string> names(trie.size());
    for (size_t i = 0; i < trie.size(); ++i) names[i] = unique_name(ptr + "-other-key");
    for (size_t i = 0; i < trie.size(); ++i) {
      std::vector<std::string> alts;
      std::vector<std::pair<uint32_t, uint32_t>> excl = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};
      for (const auto& [c, to] : trie[i].next) {
        alts.push_back(gbnf::literal(gbnf::utf8(c)) + " " + names[to]);
        excl.emplace_back(c, c);
      }
      // Any other character (an escape always counts as other), then anything.
      alts.push_back("( " + gbnf::char_class(excl, true) + " | " + prim("json-escape") + " ) " +
                     any);
      if (!trie[i].end) alts.push_back("\"\"");
      rules_.emplace_back(names[i], join(alts, " | "));
    }
    return "\"\\\"\" " + names[0] + " \"\\\"\"";
  }

  // The rule for `$ref` (a `#` JSON pointer into the root schema).
  std::string ref_rule(const OJson& ref, const std::string& ptr, int depth) {
    if (!ref.is_string()) fail(ptr, "'$ref' must be a string");
    std::string r = ref.get<std::string>();
    std::string key = str_cat(root_id_, ":", r);
    if (auto it = refs_.find(key); it != refs_.end()) return it->second;
    if (r.empty() || r[0] != '#') fail(ptr, "unsupported remote '$ref' " + r);
    const OJson* target = nullptr;
    try {
      target = &root_->at(OJson::json_pointer(r.substr(1)));
    } catch (const std::exception&) {
      fail(ptr, "'$ref' " + r + " does not resolve");
    }
    std::string name = unique_name(r.substr(1).empty() ? "ref-root" : r.substr(1));
    refs_[key] = name;
    size_t slot = rules_.size();
    rules_.emplace_back(name, "");
    std::string body = visit(*target, r.substr(1), depth + 1, true);
    rules_[slot].second = body;
    return name;
  }

  // Follows a chain of plain `$ref`s to the schema they name.
  const OJson& resolve(const OJson& s, const std::string& ptr, int depth) {
    if (depth > 64) fail(ptr, "'$ref' chain too long");
    if (!s.is_object() || !s.contains("$ref") || has_constraints(s, {"$ref"})) return s;
    const OJson& ref = s["$ref"];
    if (!ref.is_string() || ref.get<std::string>().empty() || ref.get<std::string>()[0] != '#') {
      fail(ptr + "/$ref", "unsupported '$ref'");
    }
    try {
      return resolve(root_->at(OJson::json_pointer(ref.get<std::string>().substr(1))), ptr,
                     depth + 1);
    } catch (const nlohmann::json::exception&) {
      fail(ptr + "/$ref", "'$ref' " + ref.get<std::string>() + " does not resolve");
    }
  }

  OJson merge_all_of(const OJson& s, const std::string& ptr, int depth) {
    if (!s["allOf"].is_array() || s["allOf"].empty()) {
      fail(ptr + "/allOf", "'allOf' must be a non-empty array");
    }
    OJson out = s;
    out.erase("allOf");
    for (size_t i = 0; i < s["allOf"].size(); ++i) {
      std::string p = str_cat(ptr, "/allOf/", i);
      OJson part = resolve(s["allOf"][i], p, depth + 1);
      if (part.is_object() && part.contains("$ref")) {
        OJson rest = part;
        rest.erase("$ref");
        OJson target = resolve(OJson{{"$ref", part["$ref"]}}, p, depth + 1);
        merge_into(out, target, p, depth + 1);
        part = rest;
      }
      merge_into(out, part, p, depth + 1);
    }
    return out;
  }

  void merge_into(OJson& out, const OJson& in, const std::string& ptr, int depth) {
    if (depth > 64) fail(ptr, "'allOf' nests too deeply");
    if (in.is_boolean()) {
      if (in.get<bool>()) return;
      fail(ptr, "schema 'false' matches nothing");
    }
    if (!in.is_object()) fail(ptr, "a schema must be an object or a boolean");
    if (in.contains("allOf")) {
      merge_into(out, merge_all_of(in, ptr, depth + 1), ptr, depth + 1);
      return;
    }
    if (in.contains("$ref")) {
      OJson rest = in;
      rest.erase("$ref");
      merge_into(out, resolve(OJson{{"$ref", in["$ref"]}}, ptr, depth + 1), ptr, depth + 1);
      merge_into(out, rest, ptr, depth + 1);
      return;
    }
    for (auto it = in.begin(); it != in.end(); ++it) {
      const std::string& k = it.key();
      const OJson& v = it.value();
      if (kAnnotations.count(k)) continue;
      if (!out.contains(k)) {
        out[k] = v;
      } else if (out[k] == v) {
        continue;
      } else if (k == "properties" && v.is_object() && out[k].is_object()) {
        for (auto p = v.begin(); p != v.end(); ++p) {
          if (!out[k].contains(p.key())) {
            out[k][p.key()] = p.value();
          } else if (out[k][p.key()] != p.value()) {
            out[k][p.key()] = OJson{{"allOf", OJson::array({out[k][p.key()], p.value()})}};
          }
        }
      } else if (k == "required" && v.is_array() && out[k].is_array()) {
        for (const OJson& r : v) {
          if (std::find(out[k].begin(), out[k].end(), r) == out[k].end()) out[k].push_back(r);
        }
      } else if (k == "type") {
        auto a = read_types(out, ptr), b = read_types(in, ptr);
        std::set<std::string> both;
        for (const std::string& t : *a) {
          if (b->count(t) || (t == "integer" && b->count("number"))) both.insert(t);
          if (t == "number" && b->count("integer")) both.insert("integer");
        }
        if (both.empty()) fail(ptr + "/type", "'allOf' parts have no type in common");
        OJson t = OJson::array();
        for (const std::string& x : both) t.push_back(x);
        out["type"] = t;
      } else if (v.is_number() && out[k].is_number() &&
                 (k == "minimum" || k == "minLength" || k == "minItems" ||
                  k == "exclusiveMinimum")) {
        if (v > out[k]) out[k] = v;
      } else if (v.is_number() && out[k].is_number() &&
                 (k == "maximum" || k == "maxLength" || k == "maxItems" ||
                  k == "exclusiveMaximum")) {
        if (v < out[k]) out[k] = v;
      } else {
        fail(ptr + "/" + escape_pointer_token(k), "'allOf' parts conflict on '" + k + "'");
      }
    }
  }

  const OJson* root_ = nullptr;
  int root_id_ = 0;
  std::string prefix_;
  JsonSchemaOptions opt_;
  std::vector<std::pair<std::string, std::string>> rules_;
  std::set<std::string> names_;
  std::set<std::string> prims_;
  std::map<std::string, std::string> by_body_;
  std::map<std::string, std::string> memo_;
  std::set<std::string> active_;  // schemas being visited (keys as memo_)
  static constexpr int kMaxVisits = 20000;
  int visits_ = 0;
  std::map<std::string, std::string> refs_;
};

SchemaRuleSet::SchemaRuleSet(const JsonSchemaOptions& options)
    : impl_(std::make_unique<Impl>(options)) {}
SchemaRuleSet::~SchemaRuleSet() = default;
std::string SchemaRuleSet::rule(const nlohmann::ordered_json& schema, const std::string& prefix,
                                const nlohmann::ordered_json* root) {
  return impl_->rule(schema, prefix, root);
}
std::string SchemaRuleSet::raw_string(const nlohmann::ordered_json& schema,
                                      const std::string& prefix, const std::string& length_char,
                                      const std::string& unconstrained) {
  return impl_->raw_string(schema, prefix, length_char, unconstrained);
}
std::string SchemaRuleSet::add(const std::string& hint, const std::string& body) {
  return impl_->add(hint, body);
}
void SchemaRuleSet::replace(const std::string& name, const std::string& body) {
  impl_->replace(name, body);
}
std::string SchemaRuleSet::text(const std::string& top) const { return impl_->text(top); }

std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema,
                                const JsonSchemaOptions& options) {
  SchemaRuleSet rules(options);
  return rules.text(rules.rule(schema, ""));
}

std::string json_schema_to_gbnf(const nlohmann::json& schema, const JsonSchemaOptions& options) {
  return json_schema_to_gbnf(nlohmann::ordered_json::parse(schema.dump()), options);
}

std::string json_schema_text_to_gbnf(std::string_view schema_text,
                                     const JsonSchemaOptions& options) {
  nlohmann::ordered_json schema;
  try {
    schema = nlohmann::ordered_json::parse(schema_text);
  } catch (const nlohmann::json::exception& e) {
    VT_THROW("JSON schema: not valid JSON: ", e.what());
  }
  return json_schema_to_gbnf(schema, options);
}

std::string json_object_gbnf(const JsonSchemaOptions& options) {
  SchemaRuleSet rules(options);
  return rules.text(rules.rule(nlohmann::ordered_json{{"type", "object"}}, ""));
}

}  // namespace vtllm::structured
