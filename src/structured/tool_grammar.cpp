// Tool-call grammars: the call envelope of each format around per-parameter rules from
// SchemaRuleSet.
#include "structured/tool_grammar.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "structured/json_schema_gbnf.h"

namespace vtllm::structured {
namespace {

using OJson = nlohmann::ordered_json;

// Strings the Qwen XML parser (vLLM qwen3_coder) ends a parameter value at: raw text holds
// none of them.
const std::vector<std::string> kXmlValueStops = {"</parameter>", "<parameter=", "</function>",
                                                 "</tool_call>"};

// A rule matching any text that contains none of `words` (ASCII), as the states of their
// Aho-Corasick automaton: a state is the longest suffix of the text read so far that is a
// proper prefix of a word.
std::string text_without(SchemaRuleSet& rules, const std::vector<std::string>& words,
                         const std::string& hint) {
  std::vector<std::string> states = {""};
  std::set<char> alphabet;
  for (const std::string& w : words) {
    for (size_t i = 1; i < w.size(); ++i) {
      if (std::find(states.begin(), states.end(), w.substr(0, i)) == states.end()) {
        states.push_back(w.substr(0, i));
      }
    }
    alphabet.insert(w.begin(), w.end());
  }
  auto contains_word = [&](const std::string& s) {
    for (const std::string& w : words) {
      if (s.size() >= w.size() && s.compare(s.size() - w.size(), w.size(), w) == 0) return true;
    }
    return false;
  };
  auto state_of = [&](const std::string& s) -> int {
    for (size_t start = 0; start <= s.size(); ++start) {
      auto it = std::find(states.begin(), states.end(), s.substr(start));
      if (it != states.end()) return static_cast<int>(it - states.begin());
    }
    return 0;
  };
  // Names first (the rules refer to each other), bodies after.
  std::vector<std::string> names;
  for (size_t i = 0; i < states.size(); ++i) {
    names.push_back(
        rules.add(str_cat(hint, "-", i), str_cat("\"placeholder-", hint, "-", i, "\"")));
  }
  for (size_t i = 0; i < states.size(); ++i) {
    // One alternative per next state, its bytes a class: the bytes back to the start share the
    // negated class, so a state of the matcher holds a few stacks, not one per letter of the
    // words.
    std::vector<std::pair<uint32_t, uint32_t>> not_home;  // bytes not back to state 0 ("")
    std::map<int, std::vector<std::pair<uint32_t, uint32_t>>> ahead;  // next state: its bytes
    for (char c : alphabet) {
      const std::string next = states[i] + c;
      const int to = contains_word(next) ? -1 : state_of(next);
      if (to == 0) continue;
      not_home.emplace_back(static_cast<unsigned char>(c), static_cast<unsigned char>(c));
      if (to > 0) {
        ahead[to].emplace_back(static_cast<unsigned char>(c), static_cast<unsigned char>(c));
      }
    }
    std::vector<std::string> alts = {"\"\"", gbnf::char_class(not_home, true) + " " + names[0]};
    for (const auto& [to, bytes] : ahead) {
      alts.push_back(gbnf::char_class(bytes, false) + " " + names[static_cast<size_t>(to)]);
    }
    std::string body;
    for (size_t k = 0; k < alts.size(); ++k) body += (k ? " | " : "") + alts[k];
    rules.replace(names[i], body);
  }
  return names[0];
}

bool admits_string(const OJson& s) {
  if (!s.is_object()) return true;
  if (s.contains("type")) {
    const OJson& t = s["type"];
    if (t.is_string()) return t == "string";
    if (t.is_array()) return std::find(t.begin(), t.end(), OJson("string")) != t.end();
    return false;
  }
  for (const char* k : {"anyOf", "oneOf", "allOf", "$ref", "enum", "const", "properties", "items",
                        "minimum", "maximum"}) {
    if (s.contains(k)) return false;
  }
  return true;
}

// The rule of one XML parameter value.
std::string xml_value(SchemaRuleSet& rules, const OJson& schema, const OJson& root,
                      const std::string& prefix, const std::string& any_text) {
  bool enumerated = schema.is_object() && (schema.contains("enum") || schema.contains("const"));
  if (enumerated) {
    OJson values = schema.contains("const") ? OJson::array({schema["const"]}) : schema["enum"];
    if (!values.is_array() || values.empty()) VT_THROW("'enum' must be a non-empty array");
    std::string body;
    for (const OJson& v : values) {
      body += (body.empty() ? "" : " | ") +
              gbnf::literal(v.is_string() ? v.get<std::string>() : v.dump());
    }
    return rules.add(prefix, body);
  }
  if (admits_string(schema)) {
    return rules.raw_string(schema.is_object() ? schema : OJson::object(), prefix, "[^<]",
                            any_text);
  }
  return rules.rule(schema, prefix, &root);
}

void check_name(const std::string& name, const char* what, bool xml) {
  VT_REQUIRE(!name.empty(), "tool call grammar: empty ", what, " name");
  if (xml) {
    VT_REQUIRE(name.find_first_of(">\n") == std::string::npos, "tool call grammar: ", what,
               " name '", name, "' holds '>' or a newline, which the XML format cannot carry");
  }
}

std::string xml_call(SchemaRuleSet& rules, const ToolSpec& tool, std::string& any_text,
                     bool strict) {
  const OJson& params = tool.parameters;
  std::string body = gbnf::literal("<tool_call>\n<function=" + tool.name + ">\n");
  bool has_props = params.is_object() && params.contains("properties");
  if (params.is_object()) {
    for (const char* k : {"anyOf", "oneOf", "allOf", "$ref"}) {
      VT_REQUIRE(!params.contains(k), "'", k,
                 "' at the top of parameters is unsupported in the XML tool format");
    }
  }
  auto any = [&]() -> const std::string& {
    if (any_text.empty()) any_text = text_without(rules, kXmlValueStops, "xml-text");
    return any_text;
  };
  std::set<std::string> required;
  if (params.is_object() && params.contains("required") && params["required"].is_array()) {
    for (const OJson& r : params["required"]) {
      if (r.is_string()) required.insert(r.get<std::string>());
    }
  }
  if (has_props) {
    VT_REQUIRE(params["properties"].is_object(), "'properties' must be an object");
    for (auto it = params["properties"].begin(); it != params["properties"].end(); ++it) {
      check_name(it.key(), "parameter", true);
      std::string value = xml_value(rules, it.value(), params, tool.name + "-" + it.key(), any());
      std::string item = gbnf::literal("<parameter=" + it.key() + ">\n") + " " + value + " " +
                         gbnf::literal("\n</parameter>\n");
      body += " " + (required.count(it.key()) ? item : "( " + item + " )?");
      required.erase(it.key());
    }
  }
  VT_REQUIRE(required.empty(), "required parameter '", required.empty() ? "" : *required.begin(),
             "' is not in 'properties'");
  bool open = !params.is_object() || !has_props ? true
                                                : (params.contains("additionalProperties")
                                                       ? !(params["additionalProperties"] == false)
                                                       : !strict);
  if (open) {
    body += " ( " + gbnf::literal("<parameter=") + " [^>\\n]+ " + gbnf::literal(">\n") + " " +
            any() + " " + gbnf::literal("\n</parameter>\n") + " )*";
  }
  body += " " + gbnf::literal("</function>\n</tool_call>");
  return rules.add("call-" + tool.name, body);
}

std::string hermes_call(SchemaRuleSet& rules, const ToolSpec& tool) {
  const OJson& p = tool.parameters;
  OJson params = (p.is_null() || (p.is_object() && p.empty())) ? OJson{{"type", "object"}} : p;
  std::string args = rules.rule(params, tool.name);
  std::string head = "<tool_call>\n{\"name\": " + OJson(tool.name).dump() + ", \"arguments\": ";
  return rules.add("call-" + tool.name,
                   gbnf::literal(head) + " " + args + " " + gbnf::literal("}\n</tool_call>"));
}

}  // namespace

std::string tool_call_gbnf(std::span<const ToolSpec> tools, const ToolGrammarOptions& options) {
  VT_REQUIRE(!tools.empty(), "tool call grammar: no tools");
  bool xml = options.format == ToolCallFormat::kQwenXml;
  SchemaRuleSet rules(options.json);
  std::string any_text;
  std::vector<std::string> calls;
  for (const ToolSpec& tool : tools) {
    check_name(tool.name, "function", xml);
    try {
      calls.push_back(xml ? xml_call(rules, tool, any_text, options.json.strict)
                          : hermes_call(rules, tool));
    } catch (const Error& e) {
      VT_THROW("tool '", tool.name, "': ", e.what());
    }
  }
  std::string one;
  for (size_t i = 0; i < calls.size(); ++i) one += (i ? " | " : "") + calls[i];
  std::string call = calls.size() == 1 ? calls[0] : rules.add("call", one);
  return rules.text(options.parallel ? call + " ( \"\\n\" " + call + " )*" : call);
}

}  // namespace vtllm::structured
