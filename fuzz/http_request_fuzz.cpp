// libFuzzer: arbitrary request bodies through the OpenAI routes that read a body
// (OpenAiService: /v1/completions, /v1/chat/completions, /tokenize, /detokenize),
// with the bundled tiny model's real tokenizer and chat template and the real
// AsyncEngine over a fake model (logits a fixed function of the last token).
//
// A first byte of 0xF0 or more fuzzes the HTTP request parser instead
// (server/http_message.h): the rest is raw bytes from a client, parsed whole and
// again fed in pieces whose sizes the first byte seeds; the requests both
// complete must agree, every status is one the server answers, and `consumed`
// never passes what was given.
//
// Otherwise the first input byte picks the route, the rest is the body. Checks: no
// exception escapes a route; the status is 200 or a 4xx (a 5xx answer to a
// client's body is a bug: DESIGN §8); every body is JSON (each SSE event of a
// stream too, ending in [DONE]); an error body is an OpenAI error object.
//
// The model directory: $VTLLM_SOURCE_DIR/models/tiny-qwen3.5, else
// models/tiny-qwen3.5 under the working directory (scripts/run_fuzz.sh runs from
// the repository root), else two folders above the fuzzer binary's.
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "engine/async_engine.h"
#include "engine/model_executor.h"
#include "server/http_message.h"
#include "server/openai_service.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace vtllm;

constexpr int64_t kMaxModelLen = 24;  // bounds one input's work: n (<= 128) x max_tokens

std::string model_dir() {
  std::vector<fs::path> candidates;
  if (const char* src = std::getenv("VTLLM_SOURCE_DIR")) candidates.push_back(fs::path(src));
  candidates.push_back(fs::current_path());
  char exe[PATH_MAX] = {};
  if (readlink("/proc/self/exe", exe, sizeof exe - 1) > 0)
    candidates.push_back(fs::path(exe).parent_path().parent_path().parent_path());
  for (const fs::path& root : candidates) {
    const fs::path d = root / "models" / "tiny-qwen3.5";
    if (fs::exists(d / "tokenizer.json")) return d.string();
  }
  std::fprintf(stderr, "http_request_fuzz: models/tiny-qwen3.5 not found (set VTLLM_SOURCE_DIR)\n");
  std::abort();
}

// Logits peaked at a token that depends on the previous one and its position.
class FakeModel : public engine::HostLogitsExecutor {
 public:
  explicit FakeModel(int64_t vocab) : vocab_(vocab) {}
  int64_t vocab_size() const override { return vocab_; }
  std::vector<float> logits(const engine::StepPlan& fb) override {
    std::vector<float> logits(fb.logits_indices.size() * size_t(vocab_));
    for (size_t r = 0; r < fb.logits_indices.size(); ++r) {
      const int64_t t = fb.logits_indices[r];
      for (int64_t v = 0; v < vocab_; ++v) logits[r * vocab_ + v] = float(v % 17) * 0.1f;
      logits[r * vocab_ + (fb.token_ids[t] * 31 + fb.positions[t] * 7 + 5) % vocab_] = 4.0f;
    }
    return logits;
  }

 private:
  int64_t vocab_;
};

struct World {
  std::string dir = model_dir();
  text::Tokenizer tokenizer = text::Tokenizer::from_dir(dir);
  ChatTemplate chat_template = ChatTemplate::from_dir(dir);
  std::unique_ptr<engine::AsyncEngine> engine;
  std::unique_ptr<server::OpenAiService> service;

  World() {
    engine::EngineConfig ec;
    ec.scheduler.max_model_len = kMaxModelLen;
    ec.scheduler.max_num_seqs = 256;
    ec.scheduler.max_num_batched_tokens = 4096;
    ec.kv_cache.block_size = 16;
    ec.kv_cache.num_blocks = 256 * 3 + 1;  // every sample of n = 128 at once
    ec.eos_token_ids = {4098};
    engine = std::make_unique<engine::AsyncEngine>(
        ec, std::make_unique<FakeModel>(int64_t(tokenizer.id_end())), &tokenizer);
    server::ServiceConfig sc;
    sc.model_name = "tiny";
    sc.model_root = dir;
    sc.max_model_len = kMaxModelLen;
    service = std::make_unique<server::OpenAiService>(
        sc, *engine, tokenizer,
        [this](const std::string& req) { return chat_template.render_request(req); });
  }
};

World& world() {
  static World w;
  return w;
}

void fail(const char* what, const std::string& body, const std::string& reply) {
  std::fprintf(stderr, "http_request_fuzz: %s\nbody: %s\nreply: %s\n", what, body.c_str(),
               reply.c_str());
  std::abort();
}

void check_reply(const server::HttpReply& r, const std::string& body) {
  if (r.status >= 500 || (r.status != 200 && r.status < 400)) fail("bad status", body, r.body);
  if (r.status == 200 && r.body.empty()) return;  // a stream's head
  const json j = json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) fail("reply is not JSON", body, r.body);
  if (r.status != 200 && !(j.contains("error") && j["error"].contains("message")))
    fail("error reply without an error object", body, r.body);
}

// Parses `wire` into requests, feeding pieces of at most `piece` bytes (0: all at
// once) as a connection does.
struct Parsed {
  std::vector<server::HttpRequest> first;  // the complete requests
  int second = 0;                          // the error status; 0: none
  bool third = false;                      // bytes were left unparsed at the end
};

Parsed parse_all(std::string_view wire, size_t piece) {
  server::HttpLimits limits;
  limits.max_header_bytes = 4096;
  limits.max_headers = 32;
  limits.max_target_bytes = 1024;
  limits.max_body_bytes = 4096;
  std::vector<server::HttpRequest> out;
  auto parser = std::make_unique<server::HttpRequestParser>(limits);
  std::string pending;
  size_t at = 0;
  for (;;) {
    const size_t n = piece == 0 ? wire.size() - at : std::min(piece, wire.size() - at);
    pending.append(wire.substr(at, n));
    at += n;
    for (;;) {
      const server::HttpRequestParser::Step s = parser->put(pending);
      if (s.consumed > pending.size()) fail("parser consumed more than it was given", "", "");
      pending.erase(0, s.consumed);
      if (s.state == server::HttpRequestParser::State::kError) {
        const int st = parser->error_status();
        if (st != 400 && st != 413 && st != 414 && st != 431)
          fail("parser error status outside 400/413/414/431", std::string(wire), "");
        return {std::move(out), st, false};
      }
      if (s.state != server::HttpRequestParser::State::kComplete) break;
      out.push_back(parser->take());
      parser = std::make_unique<server::HttpRequestParser>(limits);
    }
    if (at == wire.size()) return {std::move(out), 0, !pending.empty() || parser->header_done()};
  }
}

void fuzz_parser(uint8_t seed, std::string_view wire) {
  const auto whole = parse_all(wire, 0);
  const auto split = parse_all(wire, 1 + seed % 7);
  const auto& a = whole.first;
  const auto& b = split.first;
  // Beast reports a malformed head as soon as it parses it, which a piecewise
  // feed may only reach once the head's end arrives (or its limit or the header
  // timeout): one parse may stop earlier than the other, but the requests both
  // completed must be the same, and the shorter list must end unfinished.
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const bool same = a[i].method == b[i].method && a[i].target == b[i].target &&
                      a[i].version == b[i].version && a[i].keep_alive == b[i].keep_alive &&
                      a[i].headers == b[i].headers && a[i].body == b[i].body;
    if (!same) fail("whole and piecewise parses differ", std::string(wire), "");
    if (a[i].body.size() > 4096) fail("a body over the limit was accepted", std::string(wire), "");
  }
  if (a.size() != b.size()) {
    const auto& shorter = a.size() < b.size() ? whole : split;
    if (shorter.second == 0 && !shorter.third)
      fail("one parse completed fewer requests and ended clean", std::string(wire), "");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] >= 0xF0) {
    fuzz_parser(data[0], std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
    return 0;
  }
  World& w = world();
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  server::HttpReply reply;
  std::shared_ptr<server::Generation> stream;
  switch (data[0] % 4) {
    case 0:
    case 1: {
      server::OpenAiService::Started s =
          data[0] % 4 == 0 ? w.service->completions(body) : w.service->chat_completions(body);
      reply = std::move(s.reply);
      if (s.gen && s.gen->streaming()) {
        stream = std::move(s.gen);
        reply.body.clear();
      } else if (s.gen) {
        reply = w.service->finish(*s.gen);
      }
      break;
    }
    case 2:
      reply = w.service->tokenize(body);
      break;
    default:
      reply = w.service->detokenize(body);
      break;
  }
  check_reply(reply, body);
  if (stream) {
    std::string frames;
    while (stream->next_frames(frames)) {
    }
    // Every event is "data: <json>\n\n", the last one "data: [DONE]\n\n".
    size_t at = 0;
    bool done = false;
    while (at < frames.size()) {
      const size_t end = frames.find("\n\n", at);
      if (end == std::string::npos || frames.compare(at, 6, "data: ") != 0)
        fail("malformed SSE", body, frames);
      const std::string payload = frames.substr(at + 6, end - at - 6);
      if (payload == "[DONE]") {
        done = true;
      } else if (json::parse(payload, nullptr, false).is_discarded()) {
        fail("SSE event is not JSON", body, frames);
      }
      at = end + 2;
    }
    if (!done) fail("stream did not end with [DONE]", body, frames);
  }
  return 0;
}
