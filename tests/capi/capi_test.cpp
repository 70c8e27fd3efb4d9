// The C API (include/vtllm.h, libvtllm.so) on the bundled tiny model, on the CPU:
// the library loaded with dlopen, errors as codes with messages, streaming against
// whole responses, greedy tokens against the engine run directly, eight threads at
// once, and aborts.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine_builder.h"
#include "engine/llm_engine.h"
#include "vtllm.h"

namespace {

using nlohmann::json;

const std::string kModel = std::string(VTLLM_SOURCE_DIR) + "/models/tiny-qwen3.5";
constexpr const char* kOptions = R"({"device": "cpu", "max_model_len": 1024, "max_num_seqs": 16})";

// One engine for the suite: loading is the slow part.
class CApi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(vtllm_engine_create(kModel.c_str(), kOptions, &engine_), VTLLM_OK)
        << vtllm_last_error();
  }
  static void TearDownTestSuite() {
    vtllm_engine_destroy(engine_);
    engine_ = nullptr;
  }

  // The whole response of a completion (or chat) body; fails the test on an error.
  static json complete(const json& body, bool chat = false) {
    char* out = nullptr;
    const std::string b = body.dump();
    const int rc =
        chat ? vtllm_chat(engine_, b.c_str(), &out) : vtllm_complete(engine_, b.c_str(), &out);
    EXPECT_EQ(rc, VTLLM_OK) << vtllm_last_error();
    if (rc != VTLLM_OK) return json();
    EXPECT_NE(out, nullptr);
    json r = json::parse(out);
    vtllm_free_string(out);
    return r;
  }

  // The error object of a request call that must fail with `code`.
  static json request_error(int code, const std::string& body) {
    char* out = reinterpret_cast<char*>(1);  // must come back NULL
    EXPECT_EQ(vtllm_complete(engine_, body.c_str(), &out), code);
    EXPECT_EQ(out, nullptr);
    return json::parse(vtllm_last_error());
  }

  static vtllm_engine* engine_;
};

vtllm_engine* CApi::engine_ = nullptr;

// Collects a stream's payloads.
struct Collected {
  std::vector<std::string> payloads;
  int stop_after = -1;  // return non-zero from this call on (-1: never)
};

int collect(const char* data, void* user) {
  auto* c = static_cast<Collected*>(user);
  c->payloads.emplace_back(data);
  return c->stop_after >= 0 && int(c->payloads.size()) >= c->stop_after ? 1 : 0;
}

json greedy(const std::string& prompt, int max_tokens) {
  return {{"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}, {"ignore_eos", true}};
}

TEST(CApiLibrary, DlopenExportsOnlyTheCApiAndCompletes) {
  void* lib = dlopen(VTLLM_CAPI_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  for (const char* name : {"vtllm_abi_version", "vtllm_version", "vtllm_engine_create",
                           "vtllm_engine_destroy", "vtllm_complete", "vtllm_chat", "vtllm_stream",
                           "vtllm_abort", "vtllm_free_string", "vtllm_last_error"}) {
    EXPECT_NE(dlsym(lib, name), nullptr) << name;
  }
  // The C++ inside stays hidden (vtllm::version(), vtllm::engine::build_engine).
  EXPECT_EQ(dlsym(lib, "_ZN5vtllm7versionEv"), nullptr);
  EXPECT_EQ(dlsym(lib, "_ZN5vtllm6engine12build_engineERKNS0_10EngineArgsE"), nullptr);

  auto abi = reinterpret_cast<int (*)()>(dlsym(lib, "vtllm_abi_version"));
  auto create = reinterpret_cast<int (*)(const char*, const char*, vtllm_engine**)>(
      dlsym(lib, "vtllm_engine_create"));
  auto destroy = reinterpret_cast<void (*)(vtllm_engine*)>(dlsym(lib, "vtllm_engine_destroy"));
  auto complete =
      reinterpret_cast<int (*)(vtllm_engine*, const char*, char**)>(dlsym(lib, "vtllm_complete"));
  auto free_string = reinterpret_cast<void (*)(char*)>(dlsym(lib, "vtllm_free_string"));
  auto last_error = reinterpret_cast<const char* (*)()>(dlsym(lib, "vtllm_last_error"));
  ASSERT_TRUE(abi && create && destroy && complete && free_string && last_error);
  EXPECT_EQ(abi(), VTLLM_ABI_VERSION);

  vtllm_engine* e = nullptr;
  ASSERT_EQ(create(kModel.c_str(), kOptions, &e), VTLLM_OK) << last_error();
  char* out = nullptr;
  ASSERT_EQ(complete(e, greedy("Hello", 5).dump().c_str(), &out), VTLLM_OK) << last_error();
  const json r = json::parse(out);
  free_string(out);
  destroy(e);
  EXPECT_EQ(r["object"], "text_completion");
  EXPECT_EQ(r["usage"]["completion_tokens"], 5);
  EXPECT_FALSE(r["choices"][0]["text"].get<std::string>().empty());
  dlclose(lib);
}

TEST(CApiLibrary, BadModelDirectoryIsAnErrorNamingIt) {
  const std::string dir = "/nonexistent/vtllm-capi-model";
  vtllm_engine* e = reinterpret_cast<vtllm_engine*>(1);
  EXPECT_EQ(vtllm_engine_create(dir.c_str(), nullptr, &e), VTLLM_ERR_MODEL_LOAD);
  EXPECT_EQ(e, nullptr);
  EXPECT_NE(std::string(vtllm_last_error()).find(dir), std::string::npos) << vtllm_last_error();
}

TEST(CApiLibrary, BadOptionsNameTheKey) {
  vtllm_engine* e = nullptr;
  EXPECT_EQ(vtllm_engine_create(kModel.c_str(), R"({"max_num_seq": 4})", &e),
            VTLLM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(vtllm_last_error()).find("'max_num_seq'"), std::string::npos)
      << vtllm_last_error();
  EXPECT_EQ(vtllm_engine_create(kModel.c_str(), R"({"max_num_seqs": "four"})", &e),
            VTLLM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(vtllm_last_error()).find("max_num_seqs"), std::string::npos)
      << vtllm_last_error();
  EXPECT_EQ(vtllm_engine_create(kModel.c_str(), R"({"device": "tpu"})", &e),
            VTLLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(vtllm_engine_create(kModel.c_str(), "[1, 2]", &e), VTLLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(vtllm_engine_create(nullptr, nullptr, &e), VTLLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(e, nullptr);
}

TEST(CApiLibrary, LastErrorIsPerThread) {
  vtllm_engine* e = nullptr;
  ASSERT_NE(vtllm_engine_create("/nonexistent/a", nullptr, &e), VTLLM_OK);
  std::string other;
  std::thread([&] { other = vtllm_last_error(); }).join();
  EXPECT_EQ(other, "");
  EXPECT_NE(std::string(vtllm_last_error()).find("/nonexistent/a"), std::string::npos);
}

TEST_F(CApi, MalformedRequestsAreOpenAiErrors) {
  json err = request_error(VTLLM_ERR_INVALID_REQUEST, "{\"prompt\": ");
  EXPECT_EQ(err["error"]["type"], "invalid_request_error");
  EXPECT_EQ(err["error"]["code"], "invalid_json");
  EXPECT_TRUE(err["error"]["message"].is_string());

  err = request_error(VTLLM_ERR_INVALID_REQUEST, R"({"prompt": "hi", "max_tokens": "ten"})");
  EXPECT_EQ(err["error"]["param"], "max_tokens");
  EXPECT_EQ(err["error"]["code"], "invalid_type");

  err = request_error(VTLLM_ERR_INVALID_REQUEST, R"({"prompt": "hi", "model": "other"})");
  EXPECT_EQ(err["error"]["code"], "model_not_found");

  err = request_error(VTLLM_ERR_INVALID_REQUEST, R"({"prompt": "hi", "stream": true})");
  EXPECT_EQ(err["error"]["param"], "stream");

  err = request_error(VTLLM_ERR_INVALID_REQUEST, R"({"prompt": "hi", "request_id": 7})");
  EXPECT_EQ(err["error"]["param"], "request_id");

  char* out = nullptr;
  EXPECT_EQ(vtllm_complete(engine_, nullptr, &out), VTLLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(vtllm_complete(nullptr, "{}", &out), VTLLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(vtllm_stream(engine_, "{}", nullptr, nullptr), VTLLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(json::parse(vtllm_last_error())["error"]["code"], "null_argument");
  // vtllm_stream takes "stream" as true, but one of the wrong type is the server's 400.
  Collected none;
  EXPECT_EQ(vtllm_stream(engine_, R"({"prompt": "hi", "stream": "yes"})", collect, &none),
            VTLLM_ERR_INVALID_REQUEST);
  EXPECT_EQ(json::parse(vtllm_last_error())["error"]["param"], "stream");
  EXPECT_TRUE(none.payloads.empty());
}

TEST_F(CApi, StreamedChunksConcatenateToTheWholeText) {
  const json body = greedy("The quick brown fox", 24);
  const std::string whole = complete(body)["choices"][0]["text"];
  ASSERT_FALSE(whole.empty());

  Collected c;
  ASSERT_EQ(vtllm_stream(engine_, body.dump().c_str(), collect, &c), VTLLM_OK)
      << vtllm_last_error();
  ASSERT_GE(c.payloads.size(), 2u);
  EXPECT_EQ(c.payloads.back(), "[DONE]");
  std::string text;
  for (size_t i = 0; i + 1 < c.payloads.size(); ++i) {
    const json chunk = json::parse(c.payloads[i]);
    EXPECT_EQ(chunk["object"], "text_completion");
    text += chunk["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, whole);
  EXPECT_EQ(json::parse(c.payloads[c.payloads.size() - 2])["choices"][0]["finish_reason"],
            "length");

  // Chat: a body with "messages" streams as chat.completion.chunk deltas.
  const json chat = {{"messages", {{{"role", "user"}, {"content", "Hi there"}}}},
                     {"max_completion_tokens", 12},
                     {"temperature", 0},
                     {"ignore_eos", true}};
  const std::string content = complete(chat, true)["choices"][0]["message"]["content"];
  Collected cc;
  ASSERT_EQ(vtllm_stream(engine_, chat.dump().c_str(), collect, &cc), VTLLM_OK)
      << vtllm_last_error();
  std::string streamed;
  for (size_t i = 0; i + 1 < cc.payloads.size(); ++i) {
    const json chunk = json::parse(cc.payloads[i]);
    EXPECT_EQ(chunk["object"], "chat.completion.chunk");
    const json& delta = chunk["choices"][0]["delta"];
    if (delta.contains("content")) streamed += delta["content"].get<std::string>();
  }
  EXPECT_EQ(streamed, content);
}

TEST_F(CApi, GreedyTokensEqualTheEngineRunDirectly) {
  const std::string prompt = "Tell me a story about";
  constexpr int kTokens = 24;
  json body = greedy(prompt, kTokens);
  body["logprobs"] = 0;  // the sampled tokens' strings
  const json r = complete(body);
  const json& tokens = r["choices"][0]["logprobs"]["tokens"];
  ASSERT_EQ(tokens.size(), size_t(kTokens));

  // The reference: the synchronous engine on the same directory, built by hand.
  vtllm::engine::EngineArgs args;
  args.dir = kModel;
  args.max_model_len = 1024;
  args.max_num_seqs = 1;
  args.quiet = true;
  vtllm::engine::EngineParts parts = vtllm::engine::build_engine(args);
  const vtllm::text::Tokenizer& tok = *parts.tokenizer;
  vtllm::engine::LlmEngine engine(parts.engine, std::move(parts.runner), &tok);
  vtllm::engine::SamplingParams p;
  p.temperature = 0;
  p.max_tokens = kTokens;
  p.ignore_eos = true;
  engine.add_request("ref", tok.encode(prompt), p);
  std::vector<int32_t> ids;
  std::string text;
  while (engine.has_unfinished()) {
    for (const auto& o : engine.step()) {
      ids.insert(ids.end(), o.new_token_ids.begin(), o.new_token_ids.end());
      text += o.new_text;
    }
  }
  ASSERT_EQ(ids.size(), size_t(kTokens));
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t one[1] = {ids[i]};
    EXPECT_EQ(tokens[i].get<std::string>(), tok.decode(one, false)) << "token " << i;
  }
  EXPECT_EQ(r["choices"][0]["text"], text);
}

TEST_F(CApi, EightThreadsAtOnceGetTheirSequentialAnswers) {
  constexpr int kThreads = 8;
  std::vector<std::string> prompts, sequential(kThreads), concurrent(kThreads);
  for (int i = 0; i < kThreads; ++i) prompts.push_back("Prompt number " + std::to_string(i * 7));
  for (int i = 0; i < kThreads; ++i)
    sequential[i] = complete(greedy(prompts[i], 20))["choices"][0]["text"];
  std::vector<int> rcs(kThreads, -1);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      char* out = nullptr;
      rcs[i] = vtllm_complete(engine_, greedy(prompts[i], 20).dump().c_str(), &out);
      if (rcs[i] == VTLLM_OK) concurrent[i] = json::parse(out)["choices"][0]["text"];
      vtllm_free_string(out);
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_EQ(rcs[i], VTLLM_OK) << i;
    EXPECT_EQ(concurrent[i], sequential[i]) << prompts[i];
  }
  // Not all the same: the threads' prompts really differ.
  EXPECT_NE(sequential[0], sequential[1]);
}

struct AbortFromCallback {
  vtllm_engine* engine;
  std::vector<std::string> payloads;
  int abort_rc = -1;
  int duplicate_rc = -1;
  std::string duplicate_error;
};

int abort_on_first(const char* data, void* user) {
  auto* a = static_cast<AbortFromCallback*>(user);
  a->payloads.emplace_back(data);
  if (a->payloads.size() == 1) {
    // While "s1" is in flight its request_id is taken.
    char* out = nullptr;
    a->duplicate_rc =
        vtllm_complete(a->engine, R"({"prompt": "x", "max_tokens": 1, "request_id": "s1"})", &out);
    a->duplicate_error = vtllm_last_error();
    a->abort_rc = vtllm_abort(a->engine, "s1");
  }
  return 0;
}

TEST_F(CApi, AbortEndsAStreamWithFinishReasonAbort) {
  json body = greedy("Abort me", 900);
  body["request_id"] = "s1";
  AbortFromCallback a{engine_, {}, -1, -1, {}};
  ASSERT_EQ(vtllm_stream(engine_, body.dump().c_str(), abort_on_first, &a), VTLLM_OK)
      << vtllm_last_error();
  EXPECT_EQ(a.abort_rc, VTLLM_OK);
  EXPECT_EQ(a.duplicate_rc, VTLLM_ERR_INVALID_REQUEST);
  EXPECT_EQ(json::parse(a.duplicate_error)["error"]["code"], "duplicate_request_id");
  ASSERT_GE(a.payloads.size(), 2u);
  EXPECT_LT(a.payloads.size(), 900u);
  EXPECT_EQ(a.payloads.back(), "[DONE]");
  EXPECT_EQ(json::parse(a.payloads[a.payloads.size() - 2])["choices"][0]["finish_reason"], "abort");
  // Once it ended, the id is free again and unknown to vtllm_abort.
  EXPECT_EQ(vtllm_abort(engine_, "s1"), VTLLM_ERR_NOT_FOUND);
}

TEST_F(CApi, AbortEndsAWholeRequestFromAnotherThread) {
  json body = greedy("Abort me too", 1000);
  body["request_id"] = "w1";
  json r;
  std::thread runner([&] { r = complete(body); });
  // The request registers its id first thing; poll until the abort finds it.
  int rc = VTLLM_ERR_NOT_FOUND;
  for (int i = 0; i < 2000 && rc == VTLLM_ERR_NOT_FOUND; ++i) {
    rc = vtllm_abort(engine_, "w1");
    if (rc == VTLLM_ERR_NOT_FOUND) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  runner.join();
  EXPECT_EQ(rc, VTLLM_OK) << vtllm_last_error();
  EXPECT_EQ(r["choices"][0]["finish_reason"], "abort");
  EXPECT_LT(r["usage"]["completion_tokens"].get<int>(), 1000);
}

TEST_F(CApi, CallbackStopsTheStreamAndTheEngineGoesOn) {
  Collected c;
  c.stop_after = 3;
  ASSERT_EQ(vtllm_stream(engine_, greedy("Stop early", 200).dump().c_str(), collect, &c), VTLLM_OK);
  EXPECT_EQ(c.payloads.size(), 3u);
  EXPECT_EQ(complete(greedy("After the stop", 4))["usage"]["completion_tokens"], 4);
}

}  // namespace
