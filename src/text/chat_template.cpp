#include "text/chat_template.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/file.h"
#include "text/jinja/json.h"

namespace vtllm {

namespace {

constexpr const char* kSpecialTokens[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                          "pad_token", "cls_token", "mask_token"};
constexpr const char* kReserved[] = {"messages", "tools", "documents", "add_generation_prompt"};

}  // namespace

ChatTemplate ChatTemplate::from_dir(const std::string& dir, const std::string& template_file) {
  namespace fs = std::filesystem;
  fs::path config_path = fs::path(dir) / "tokenizer_config.json";
  nlohmann::json config = nlohmann::json::object();
  if (fs::exists(config_path)) {
    try {
      config = nlohmann::json::parse(read_file(config_path));
    } catch (const nlohmann::json::exception& e) {
      VT_THROW(config_path.string(), ": invalid JSON: ", e.what());
    }
    if (!config.is_object()) VT_THROW(config_path.string(), ": expected a JSON object");
  }

  std::vector<std::pair<std::string, std::string>> sources;
  fs::path jinja_path = fs::path(dir) / "chat_template.jinja";
  if (!template_file.empty()) {
    sources.emplace_back("default", read_file(template_file));
  } else if (fs::exists(jinja_path)) {
    sources.emplace_back("default", read_file(jinja_path));
  } else if (const fs::path json_path = fs::path(dir) / "chat_template.json";
             fs::exists(json_path)) {
    // The processor's legacy file (transformers reads it after chat_template.jinja and
    // before tokenizer_config.json): {"chat_template": "..."}.
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(read_file(json_path));
    } catch (const nlohmann::json::exception& e) {
      VT_THROW(json_path.string(), ": invalid JSON: ", e.what());
    }
    if (!j.is_object() || !j.contains("chat_template") || !j["chat_template"].is_string())
      VT_THROW(json_path.string(), ": expected an object with a string 'chat_template'");
    sources.emplace_back("default", j["chat_template"].get<std::string>());
  } else if (config.contains("chat_template") && config["chat_template"].is_string()) {
    sources.emplace_back("default", config["chat_template"].get<std::string>());
  } else if (config.contains("chat_template") && config["chat_template"].is_array()) {
    for (const auto& t : config["chat_template"]) {
      if (!t.is_object() || !t.contains("name") || !t.contains("template") || !t["name"].is_string() ||
          !t["template"].is_string())
        VT_THROW(config_path.string(), ": chat_template list entries need string 'name' and 'template'");
      sources.emplace_back(t["name"].get<std::string>(), t["template"].get<std::string>());
    }
  }
  if (sources.empty())
    VT_THROW(dir, ": no chat template (no chat_template.jinja or chat_template.json, and "
             "tokenizer_config.json has no chat_template)");

  std::vector<std::pair<std::string, std::string>> specials;
  for (const char* name : kSpecialTokens) {
    if (!config.contains(name)) continue;
    const auto& v = config[name];
    if (v.is_string()) specials.emplace_back(name, v.get<std::string>());
    else if (v.is_object() && v.contains("content") && v["content"].is_string())
      specials.emplace_back(name, v["content"].get<std::string>());
  }
  return ChatTemplate(std::move(sources), std::move(specials));
}

ChatTemplate::ChatTemplate(std::vector<std::pair<std::string, std::string>> named_sources,
                           std::vector<std::pair<std::string, std::string>> special_tokens,
                           jinja::TemplateOptions options)
    : special_tokens_(std::move(special_tokens)) {
  for (auto& [name, source] : named_sources) templates_.emplace_back(name, jinja::Template(source, options));
  if (templates_.empty()) VT_THROW("ChatTemplate: no template given");
}

const jinja::Template& ChatTemplate::pick(bool has_tools) const {
  if (templates_.size() == 1) return templates_[0].second;
  const jinja::Template* dflt = nullptr;
  for (const auto& [name, t] : templates_) {
    if (has_tools && name == "tool_use") return t;
    if (name == "default") dflt = &t;
  }
  if (!dflt) VT_THROW("the tokenizer has several chat templates and none is named 'default'");
  return *dflt;
}

std::string ChatTemplate::render(const jinja::Value& messages, const jinja::Value& tools,
                                 const jinja::Value& documents, bool add_generation_prompt,
                                 const jinja::Value& extra_kwargs) const {
  using jinja::Value;
  jinja::DictData ctx;
  ctx.set(Value("messages"), messages);
  ctx.set(Value("tools"), tools);
  ctx.set(Value("documents"), documents);
  ctx.set(Value("add_generation_prompt"), Value(add_generation_prompt));
  for (const auto& [name, token] : special_tokens_) ctx.set(Value(name), Value(token));
  if (extra_kwargs.is_dict()) {
    for (const auto& [k, v] : extra_kwargs.dict().entries) {
      if (!k.is_string()) VT_THROW("chat_template_kwargs: keys must be strings");
      for (const char* r : kReserved)
        if (k.as_string() == r) VT_THROW("chat_template_kwargs may not set '", r, "'");
      ctx.set(k, v);
    }
  } else if (!extra_kwargs.is_none() && !extra_kwargs.is_undefined()) {
    VT_THROW("chat_template_kwargs must be an object");
  }
  return pick(!tools.is_none() && !tools.is_undefined()).render(Value::mapping(std::move(ctx)));
}

std::string ChatTemplate::render_request(std::string_view request_json) const {
  using jinja::Value;
  Value req;
  try {
    req = jinja::json_loads(request_json);
  } catch (const jinja::TemplateError& e) {
    VT_THROW("chat request: ", e.message());
  }
  if (!req.is_dict()) VT_THROW("chat request: expected a JSON object");
  const Value* messages = req.dict().find_key("messages");
  if (!messages || !messages->is_list()) VT_THROW("chat request: 'messages' must be a list");
  auto field = [&](const char* name) {
    const Value* v = req.dict().find_key(name);
    return v ? *v : Value::none();
  };
  Value agp = field("add_generation_prompt");
  if (!agp.is_none() && !agp.is_bool()) VT_THROW("chat request: 'add_generation_prompt' must be a boolean");
  return render(*messages, field("tools"), field("documents"), agp.is_none() ? true : agp.as_bool(),
                field("chat_template_kwargs"));
}

}  // namespace vtllm
