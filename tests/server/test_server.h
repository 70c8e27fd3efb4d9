// A whole server in the test process: the real AsyncEngine driven by a fake
// model, the bundled tiny model's real tokenizer and chat template, and the
// HTTP server on a free loopback port.
//
// The fake model's greedy continuation is a closed-form rule (next_token), so
// tests know every output token without running the server.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/async_engine.h"
#include "engine/model_runner.h"
#include "server/http_server.h"
#include "server/openai_service.h"
#include "test_client.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace vtllm::server::testing {

inline std::string tiny_model_dir() {
  return std::string(VTLLM_SOURCE_DIR) + "/models/tiny-qwen3.5";
}

// The ids whose text is printable ASCII: the fake model emits only those, so
// every output decodes to whole characters, token by token.
inline const std::vector<int32_t>& ascii_ids(const text::Tokenizer& tok) {
  static const std::vector<int32_t> ids = [&] {
    std::vector<int32_t> out;
    for (int32_t id = 0; id < 4096; ++id) {
      const int32_t one[1] = {id};
      const std::string t = tok.decode(one, false);
      bool ok = !t.empty();
      for (char c : t) ok = ok && c >= 0x20 && c < 0x7f;
      if (ok) out.push_back(id);
    }
    return out;
  }();
  return ids;
}

inline int32_t next_token(const std::vector<int32_t>& ascii, int32_t last, int64_t position) {
  return ascii[size_t((int64_t(last) * 7 + position * 3 + 11) % int64_t(ascii.size()))];
}

// A scripted output: the token the fake model gives at position start + k is ids[k],
// then EOS (4098). Positions before `start` follow next_token. Set before the request.
struct ScriptedOutput {
  std::atomic<int64_t> start{-1};
  std::vector<int32_t> ids;
};

class FakeModel : public engine::HostLogitsExecutor {
 public:
  FakeModel(int64_t vocab, std::vector<int32_t> ascii, std::chrono::microseconds step_time,
            std::shared_ptr<ScriptedOutput> script = nullptr)
      : vocab_(vocab),
        ascii_(std::move(ascii)),
        step_time_(step_time),
        script_(std::move(script)) {}
  int64_t vocab_size() const override { return vocab_; }
  std::vector<float> logits(const engine::StepPlan& fb) override {
    if (step_time_.count() > 0) std::this_thread::sleep_for(step_time_);
    std::vector<float> logits(fb.logits_indices.size() * size_t(vocab_), 0.0f);
    for (size_t r = 0; r < fb.logits_indices.size(); ++r) {
      const int64_t t = fb.logits_indices[r];
      int32_t next = next_token(ascii_, fb.token_ids[t], fb.positions[t] + 1);
      if (script_ && script_->start >= 0 && fb.positions[t] + 1 >= script_->start) {
        const size_t k = size_t(fb.positions[t] + 1 - script_->start);
        next = k < script_->ids.size() ? script_->ids[k] : 4098;
      }
      // A clear peak plus a ramp, so top logprobs have a definite order.
      for (int64_t v = 0; v < vocab_; ++v) logits[r * vocab_ + v] = float(v % 13) * 0.01f;
      logits[r * vocab_ + next] = 10.0f;
    }
    return logits;
  }

 private:
  int64_t vocab_;
  std::vector<int32_t> ascii_;
  std::chrono::microseconds step_time_;
  std::shared_ptr<ScriptedOutput> script_;
};

// The greedy output ids the fake model gives for a prompt.
inline std::vector<int32_t> expected_ids(const text::Tokenizer& tok,
                                         const std::vector<int32_t>& prompt, int64_t max_tokens) {
  std::vector<int32_t> out;
  int32_t last = prompt.back();
  int64_t pos = int64_t(prompt.size());
  for (int64_t i = 0; i < max_tokens; ++i) {
    last = next_token(ascii_ids(tok), last, pos++);
    out.push_back(last);
  }
  return out;
}

struct TestServerOptions {
  std::string api_key;
  size_t max_body_bytes = 1u << 20;
  int max_pending_requests = 1024;
  int64_t max_model_len = 512;
  int max_num_seqs = 64;
  std::chrono::microseconds step_time{0};
  // The bundled tiny model itself (ModelRunner on the CPU) instead of FakeModel: for
  // what the fake refuses (prompt logprob rows). step_time does not apply.
  bool real_model = false;
  SamplingDefaults sampling_defaults;  // as --generation-config would set them
  // A chat template file in place of the tiny model's (Qwen3-style) one.
  std::string chat_template_file;
  // The fake model's scripted output (see ScriptedOutput); null: next_token only.
  std::shared_ptr<ScriptedOutput> script;
  // --tool-call-parser, --enable-auto-tool-choice, --reasoning-parser.
  std::optional<ToolCallFormat> tool_call_parser;
  bool enable_auto_tool_choice = false;
  std::optional<ReasoningFormat> reasoning_parser;
  StructuredOutputsConfig structured_outputs;
  // With real_model: GDN state snapshots (hybrid prefix caching; 0 leaves it off).
  int32_t num_state_snapshots = 0;
  // Overrides of the HTTP defaults (limits and timeouts included); the host,
  // port, key and body limit above are set over it.
  HttpServerConfig http;
};

class TestServer {
 public:
  explicit TestServer(TestServerOptions o = {})
      : tokenizer_(text::Tokenizer::from_dir(tiny_model_dir())),
        chat_template_(ChatTemplate::from_dir(tiny_model_dir(), o.chat_template_file)) {
    engine::EngineConfig ec;
    ec.scheduler.max_model_len = o.max_model_len;
    ec.scheduler.max_num_seqs = o.max_num_seqs;
    ec.scheduler.max_num_batched_tokens = 1024;
    ec.kv_cache.block_size = 16;
    ec.kv_cache.num_blocks = o.max_num_seqs * (o.max_model_len / 16) + 1;
    ec.eos_token_ids = {4098};
    ec.jump_forward = true;  // vtllm serve --jump-forward: the server tests cover it
    const int64_t vocab = int64_t(tokenizer_.id_end());
    std::unique_ptr<engine::ModelExecutor> model;
    if (o.real_model) {
      ec.kv_cache.num_state_slots = o.max_num_seqs;
      ec.kv_cache.num_state_snapshots = o.num_state_snapshots;
      model = engine::ModelRunner::load(tiny_model_dir(), ec.kv_cache);
    } else {
      model = std::make_unique<FakeModel>(vocab, ascii_ids(tokenizer_), o.step_time, o.script);
    }
    engine_ = std::make_unique<engine::AsyncEngine>(ec, std::move(model), &tokenizer_);
    ServiceConfig sc;
    sc.model_name = "tiny";
    sc.model_root = tiny_model_dir();
    sc.max_model_len = o.max_model_len;
    sc.max_pending_requests = o.max_pending_requests;
    sc.sampling_defaults = o.sampling_defaults;
    sc.tool_call_parser = o.tool_call_parser;
    sc.enable_auto_tool_choice = o.enable_auto_tool_choice;
    sc.reasoning_parser = o.reasoning_parser;
    sc.structured_outputs = o.structured_outputs;
    sc.eos_token_ids = {4098};
    service_ = std::make_unique<OpenAiService>(
        sc, *engine_, tokenizer_,
        [this](const std::string& req) { return chat_template_.render_request(req); });
    HttpServerConfig hc = o.http;
    hc.host = "127.0.0.1";
    hc.port = 0;
    hc.api_key = o.api_key;
    hc.limits.max_body_bytes = o.max_body_bytes;
    http_ = std::make_unique<HttpServer>(hc, *service_);
    port_ = http_->bind();
    thread_ = std::thread([this] { http_->serve(); });
  }

  ~TestServer() { stop(); }

  // Drains and stops; returns how many requests the drain's deadline cut.
  int stop(std::chrono::milliseconds drain = std::chrono::milliseconds(5000)) {
    if (!thread_.joinable()) return 0;
    const int cut = http_->shutdown(drain);
    thread_.join();
    return cut;
  }

  int port() const { return port_; }
  std::unique_ptr<Client> client() const { return std::make_unique<Client>(port_); }
  HttpServer& http() { return *http_; }
  const text::Tokenizer& tokenizer() const { return tokenizer_; }
  engine::AsyncEngine& engine() { return *engine_; }
  OpenAiService& service() { return *service_; }

 private:
  text::Tokenizer tokenizer_;
  ChatTemplate chat_template_;
  std::unique_ptr<engine::AsyncEngine> engine_;
  std::unique_ptr<OpenAiService> service_;
  std::unique_ptr<HttpServer> http_;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace vtllm::server::testing
