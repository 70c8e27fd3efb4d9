// Chat requests with image and video parts through OpenAiService and the real
// AsyncEngine: a fake media processor and a fake model that records the prompts and
// placeholder rows it is given. The expected prompt is transformers' way: the template
// rendered with {"type": "image"} items, the pads expanded in the text, then tokenized.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>

#include "base/error.h"
#include "engine/async_engine.h"
#include "engine/mm_embedder.h"
#include "server/media.h"
#include "server/openai_service.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace vtllm::server {
namespace {

using json = nlohmann::json;
using multimodal::MediaKind;

// The part of Qwen3.5's template that writes media: one vision triple per part.
constexpr const char* kTemplate =
    "{%- for m in messages %}<|im_start|>{{ m.role }}{{ '\\n' }}"
    "{%- if m.content is string %}{{ m.content }}{%- else %}{%- for item in m.content %}"
    "{%- if item.type == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{%- elif item.type == 'video' %}<|vision_start|><|video_pad|><|vision_end|>"
    "{%- elif item.type == 'text' %}{{ item.text }}{%- endif %}{%- endfor %}{%- endif %}"
    "<|im_end|>{{ '\\n' }}{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant{{ '\\n' }}{%- endif %}";

class FakeTower : public models::VisionTower {
 public:
  int64_t patch_dim() const override { return 4; }
  int64_t merge_size() const override { return 2; }
  int64_t out_hidden() const override { return 2; }
  vt::Tensor encode(vt::Stream&, const vt::Tensor& px,
                    const std::vector<models::VisionGrid>&) override {
    vt::Tensor out = vt::Tensor::empty({px.size(0) / 4, 2}, vt::DType::kF32, vt::Device::cpu());
    for (int64_t i = 0; i < out.numel(); ++i) out.data<float>()[i] = float(i);
    return out;
  }
};

// Records each request's prompt (its first step) and the placeholder rows it received.
class RecordingModel : public engine::HostLogitsExecutor {
 public:
  explicit RecordingModel(int64_t vocab) : vocab_(vocab), embedder_(tower_) {}
  int64_t vocab_size() const override { return vocab_; }
  int64_t check_multimodal() const override { return 2; }
  int64_t encoder_bytes_per_token() const override { return 8; }
  std::vector<float> logits(const engine::StepPlan& p) override {
    const models::InputEmbeddings e = embedder_.embed(stream_, p);
    {
      std::lock_guard lock(mu_);
      for (int64_t b = 0; b < p.num_requests(); ++b)
        if (p.context_lens[size_t(b)] == 0)
          prompts.emplace_back(p.token_ids.begin() + p.query_start_loc[size_t(b)],
                               p.token_ids.begin() + p.query_start_loc[size_t(b + 1)]);
      embedded_rows += int64_t(e.rows.size());
      if (p.position_rows == 3) ++mrope_steps;
    }
    std::vector<float> l(p.logits_indices.size() * size_t(vocab_), 0.0f);
    for (size_t r = 0; r < p.logits_indices.size(); ++r) l[r * size_t(vocab_) + 65] = 5.0f;
    return l;
  }
  std::mutex mu_;
  std::vector<std::vector<int32_t>> prompts;
  int64_t embedded_rows = 0, mrope_steps = 0;

 private:
  int64_t vocab_;
  FakeTower tower_;
  engine::MmEmbedder embedder_;
  vt::Stream stream_{vt::Device::cpu()};
};

// "img H W" / "vid T H W": a medium of that grid; anything else is corrupt.
multimodal::VisionInput fake_process(MediaKind kind, const std::string& bytes) {
  multimodal::VisionInput v;
  v.kind = kind;
  std::istringstream in(bytes);
  std::string tag;
  in >> tag;
  if (kind == MediaKind::kImage && tag == "img") {
    in >> v.grid_h >> v.grid_w;
  } else if (kind == MediaKind::kVideo && tag == "vid") {
    in >> v.grid_t >> v.grid_h >> v.grid_w;
    for (int64_t t = 0; t < v.grid_t; ++t) v.timestamps.push_back(0.25 + double(t));
  } else {
    VT_THROW("unsupported or corrupt data (", bytes.size(), " bytes)");
  }
  v.patch_dim = 4;
  v.pixel_values.assign(size_t(v.num_patches() * 4), 0.5f);
  const engine::BlockHash h = engine::hash_bytes(bytes);
  v.hash = {h.hi, h.lo};
  return v;
}

std::string data_url(const std::string& bytes) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out = "data:application/octet-stream;base64,";
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t n = uint8_t(bytes[i]) << 16 | uint8_t(bytes[i + 1]) << 8 | uint8_t(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += k[(n >> s) & 63];
  }
  if (i < bytes.size()) {
    const uint32_t n =
        uint8_t(bytes[i]) << 16 | (i + 1 < bytes.size() ? uint8_t(bytes[i + 1]) << 8 : 0);
    out += k[(n >> 18) & 63];
    out += k[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? k[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

class MmChat : public ::testing::Test {
 protected:
  void SetUp() override { start({}); }
  void start(MediaConfig media) {
    service_.reset();
    engine_.reset();
    tokenizer_ = std::make_unique<text::Tokenizer>(
        text::Tokenizer::from_dir(std::string(VTLLM_SOURCE_DIR) + "/models/tiny-qwen3.5"));
    tmpl_ = std::make_unique<ChatTemplate>(
        std::vector<std::pair<std::string, std::string>>{{"default", kTemplate}},
        std::vector<std::pair<std::string, std::string>>{});
    engine::EngineConfig ec;
    ec.scheduler.max_model_len = 512;
    ec.scheduler.max_num_batched_tokens = 512;
    ec.kv_cache.block_size = 16;
    ec.kv_cache.num_blocks = 128;
    auto model = std::make_unique<RecordingModel>(int64_t(tokenizer_->id_end()));
    model_ = model.get();
    engine_ = std::make_unique<engine::AsyncEngine>(ec, std::move(model), tokenizer_.get());
    ServiceConfig sc;
    sc.model_name = "tiny";
    sc.max_model_len = 512;
    media.tokens = {
        *tokenizer_->token_to_id("<|image_pad|>"), *tokenizer_->token_to_id("<|video_pad|>"),
        *tokenizer_->token_to_id("<|vision_start|>"), *tokenizer_->token_to_id("<|vision_end|>")};
    if (!media.process) media.process = fake_process;
    if (!media.pool) media.pool = &pool_;
    sc.media = media;
    service_ = std::make_unique<OpenAiService>(
        sc, *engine_, *tokenizer_,
        [this](const std::string& r) { return tmpl_->render_request(r); });
  }
  // The reply of a chat request with these user content parts.
  HttpReply chat(const json& content) {
    const json body = {{"messages", json::array({{{"role", "user"}, {"content", content}}})},
                       {"max_tokens", 3},
                       {"temperature", 0}};
    OpenAiService::Started s = service_->chat_completions(body.dump());
    if (!s.gen) return s.reply;
    return service_->finish(*s.gen);
  }

  multimodal::MediaPool pool_{2};
  std::unique_ptr<text::Tokenizer> tokenizer_;
  std::unique_ptr<ChatTemplate> tmpl_;
  std::unique_ptr<engine::AsyncEngine> engine_;
  std::unique_ptr<OpenAiService> service_;
  RecordingModel* model_ = nullptr;
};

std::string repeat(const std::string& s, int64_t n) {
  std::string out;
  for (int64_t i = 0; i < n; ++i) out += s;
  return out;
}

TEST_F(MmChat, ImageAndVideoPartsReachTheEngineExpanded) {
  MediaConfig media;
  media.vision = true;
  start(media);
  const json content = json::array(
      {{{"type", "text"}, {"text", "What is in"}},
       {{"type", "image_url"}, {"image_url", {{"url", data_url("img 4 6")}}}},
       {{"type", "text"}, {"text", "and"}},
       {{"type", "video_url"}, {"video_url", data_url("vid 2 4 4")}},  // the string form
       {{"type", "image"}, {"image", data_url("img 2 2")}}});          // vLLM's simple form
  const HttpReply r = chat(content);
  ASSERT_EQ(r.status, 200) << r.body;
  const std::vector<int32_t> out = {65, 65, 65};
  EXPECT_EQ(json::parse(r.body)["choices"][0]["message"]["content"], tokenizer_->decode(out));

  const std::string vs = "<|vision_start|>", ve = "<|vision_end|>";
  const std::string text = "<|im_start|>user\nWhat is in" + vs + repeat("<|image_pad|>", 6) + ve +
                           "and" + vs + "<0.2 seconds>" + vs + repeat("<|video_pad|>", 4) + ve +
                           "<1.2 seconds>" + vs + repeat("<|video_pad|>", 4) + ve + ve + vs +
                           "<|image_pad|>" + ve + "<|im_end|>\n<|im_start|>assistant\n";
  std::lock_guard lock(model_->mu_);
  ASSERT_EQ(model_->prompts.size(), 1u);
  EXPECT_EQ(model_->prompts[0], tokenizer_->encode(text, false));
  EXPECT_EQ(model_->embedded_rows, 6 + 8 + 1);
  EXPECT_GT(model_->mrope_steps, 0);
}

// vLLM's /tokenize runs the media processor: a chat's ids are the expanded ones the
// engine would run, and a bad medium is a 400 there too.
TEST_F(MmChat, TokenizeExpandsMediaAsTheEngineSeesThem) {
  MediaConfig media;
  media.vision = true;
  start(media);
  const json content =
      json::array({{{"type", "text"}, {"text", "Look"}},
                   {{"type", "image_url"}, {"image_url", {{"url", data_url("img 4 6")}}}}});
  const json messages = json::array({{{"role", "user"}, {"content", content}}});
  const HttpReply tok = service_->tokenize(json({{"messages", messages}}).dump());
  ASSERT_EQ(tok.status, 200) << tok.body;
  const json j = json::parse(tok.body);
  const HttpReply r = chat(content);
  ASSERT_EQ(r.status, 200) << r.body;
  {
    std::lock_guard lock(model_->mu_);
    ASSERT_EQ(model_->prompts.size(), 1u);
    EXPECT_EQ(j["tokens"].get<std::vector<int32_t>>(), model_->prompts[0]);
  }
  EXPECT_EQ(j["count"], json::parse(r.body)["usage"]["prompt_tokens"]);
  const int32_t pad = *tokenizer_->token_to_id("<|image_pad|>");
  EXPECT_EQ(std::count(j["tokens"].begin(), j["tokens"].end(), pad), 6);

  const json bad = json::array(
      {{{"role", "user"},
        {"content",
         json::array({{{"type", "image_url"}, {"image_url", {{"url", data_url("GIF89a x")}}}}})}}});
  const HttpReply b = service_->tokenize(json({{"messages", bad}}).dump());
  EXPECT_EQ(b.status, 400) << b.body;
  EXPECT_NE(b.body.find("corrupt"), std::string::npos) << b.body;
}

TEST_F(MmChat, BadMediaAreFourHundreds) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "vtllm_mm_chat_test";
  fs::create_directories(dir / "ok");
  std::ofstream(dir / "ok" / "a.img") << "img 2 2";
  std::ofstream(dir / "secret.img") << "img 2 2";
  MediaConfig media;
  media.vision = true;
  media.allowed_local_media_path = (dir / "ok").string();
  media.limit_images = 2;
  start(media);
  auto part = [](const std::string& url) {
    return json::array({{{"type", "image_url"}, {"image_url", {{"url", url}}}}});
  };
  auto expect_400 = [&](const json& content, const std::string& words) {
    const HttpReply r = chat(content);
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_NE(r.body.find(words), std::string::npos) << r.body;
  };
  expect_400(part("https://example.com/cat.png"), "no network");
  expect_400(part("data:image/png;base64,@@@"), "not valid base64");
  expect_400(part(data_url("GIF89a garbage")), "corrupt");
  expect_400(part("file://" + (dir / "ok" / ".." / "secret.img").string()),
             "not under --allowed-local-media-path");
  expect_400(part("ftp://x/y.png"), "unsupported URL");
  json three = json::array();
  for (int i = 0; i < 3; ++i) three.push_back(part(data_url("img 2 2"))[0]);
  expect_400(three, "--limit-mm-per-prompt");
  // Allowed: a file under the folder.
  const HttpReply ok = chat(part("file://" + (dir / "ok" / "a.img").string()));
  EXPECT_EQ(ok.status, 200) << ok.body;
  fs::remove_all(dir);
}

TEST_F(MmChat, MediaWithoutAVisionModelAreRefused) {
  MediaConfig media;  // vision = false
  media.language_model_only = true;
  start(media);
  const HttpReply r =
      chat(json::array({{{"type", "image_url"}, {"image_url", {{"url", data_url("img 2 2")}}}}}));
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("--language-model-only"), std::string::npos) << r.body;
  start(MediaConfig{});
  const HttpReply r2 =
      chat(json::array({{{"type", "video_url"}, {"video_url", data_url("vid 2 2 2")}}}));
  EXPECT_EQ(r2.status, 400);
  EXPECT_NE(r2.body.find("no vision tower"), std::string::npos) << r2.body;
  // Text-only arrays still work.
  const HttpReply t = chat(json::array({{{"type", "text"}, {"text", "hi"}}}));
  EXPECT_EQ(t.status, 200) << t.body;
}

// vLLM's return_token_ids: the prompt the engine ran (expanded) and each choice's ids.
TEST_F(MmChat, ReturnTokenIdsGivesThePromptAndOutputIds) {
  MediaConfig media;
  media.vision = true;
  start(media);
  const json body = {
      {"messages",
       json::array(
           {{{"role", "user"},
             {"content", json::array({{{"type", "image_url"},
                                       {"image_url", {{"url", data_url("img 2 4")}}}}})}}})},
      {"max_tokens", 3},
      {"temperature", 0},
      {"return_token_ids", true}};
  OpenAiService::Started s = service_->chat_completions(body.dump());
  ASSERT_TRUE(s.gen) << s.reply.body;
  const json r = json::parse(service_->finish(*s.gen).body);
  {
    std::lock_guard lock(model_->mu_);  // not held while the engine runs
    ASSERT_EQ(model_->prompts.size(), 1u);
    EXPECT_EQ(r["prompt_token_ids"].get<std::vector<int32_t>>(), model_->prompts[0]);
    EXPECT_EQ(r["choices"][0]["token_ids"].get<std::vector<int32_t>>(),
              (std::vector<int32_t>{65, 65, 65}));
  }
  // A chat stream: the prompt's ids in the role chunk, at the top level.
  json chat_stream = body;
  chat_stream["stream"] = true;
  OpenAiService::Started cs = service_->chat_completions(chat_stream.dump());
  ASSERT_TRUE(cs.gen) << cs.reply.body;
  std::string chat_frames;
  while (cs.gen->next_frames(chat_frames)) {
  }
  const size_t first = chat_frames.find("data: {");
  ASSERT_NE(first, std::string::npos) << chat_frames;
  const json role =
      json::parse(chat_frames.substr(first + 6, chat_frames.find("\n\n", first) - first - 6));
  EXPECT_EQ(role["choices"][0]["delta"]["role"], "assistant");
  {
    std::lock_guard lock(model_->mu_);
    ASSERT_EQ(model_->prompts.size(), 2u);
    EXPECT_EQ(role["prompt_token_ids"].get<std::vector<int32_t>>(), model_->prompts[1]);
  }
  // Completions: per choice, and in a stream the ids arrive with the chunks.
  const json cbody = {
      {"prompt", "Hello there"}, {"max_tokens", 2}, {"temperature", 0}, {"return_token_ids", true}};
  OpenAiService::Started c = service_->completions(cbody.dump());
  ASSERT_TRUE(c.gen);
  const json cr = json::parse(service_->finish(*c.gen).body);
  EXPECT_EQ(cr["choices"][0]["prompt_token_ids"].get<std::vector<int32_t>>(),
            tokenizer_->encode("Hello there", true));
  EXPECT_EQ(cr["choices"][0]["token_ids"].get<std::vector<int32_t>>(),
            (std::vector<int32_t>{65, 65}));
  // Streamed: the prompt ids in the first chunk, the output ids spread over the chunks.
  json sbody = cbody;
  sbody["stream"] = true;
  OpenAiService::Started st = service_->completions(sbody.dump());
  ASSERT_TRUE(st.gen);
  std::string frames;
  while (st.gen->next_frames(frames)) {
  }
  std::vector<int32_t> streamed, prompt;
  for (size_t at = 0; (at = frames.find("data: {", at)) != std::string::npos;) {
    const size_t end = frames.find("\n\n", at);
    const json chunk = json::parse(frames.substr(at + 6, end - at - 6));
    at = end;
    if (chunk["choices"].empty()) continue;
    const json& ch = chunk["choices"][0];
    if (ch.contains("prompt_token_ids"))
      prompt = ch["prompt_token_ids"].get<std::vector<int32_t>>();
    if (ch.contains("token_ids"))
      for (int32_t id : ch["token_ids"]) streamed.push_back(id);
  }
  EXPECT_EQ(prompt, tokenizer_->encode("Hello there", true));
  EXPECT_EQ(streamed, (std::vector<int32_t>{65, 65}));
}

TEST(MediaUrls, Base64AndLimits) {
  EXPECT_EQ(base64_decode("aGVsbG8="), "hello");
  EXPECT_EQ(base64_decode("aGVsbG8"), "hello");
  EXPECT_EQ(base64_decode("aGk"), "hi");
  EXPECT_FALSE(base64_decode("a").has_value());
  EXPECT_FALSE(base64_decode("a b=").has_value());
  for (const std::string s : {"", "x", "xy", "xyz", "hello world \xff\x01"})
    EXPECT_EQ(base64_decode(data_url(s).substr(data_url(s).find(',') + 1)), s);
  // Every length mod 3, every byte value, over whole quads and both tails.
  std::mt19937 rng(7);
  for (size_t n :
       {size_t(1), size_t(2), size_t(3), size_t(255), size_t(256), size_t(257), size_t(100000)}) {
    std::string bytes(n, '\0');
    for (char& c : bytes) c = char(rng() & 0xff);
    const std::string url = data_url(bytes);
    EXPECT_EQ(base64_decode(url.substr(url.find(',') + 1)), bytes) << n << " bytes";
  }
  EXPECT_EQ(base64_decode("-_-_"), base64_decode("+/+/"));  // base64url's two characters
  EXPECT_EQ(base64_decode("+/+/"), std::string("\xfb\xff\xbf"));
  for (const char* bad : {"aGVs!G8=", "aG=sbG8=", "aGVsbG8*", "aGVsbG\n8", "aGVsbG8 "})
    EXPECT_FALSE(base64_decode(bad).has_value()) << bad;
  MediaConfig c;
  parse_limit_mm_per_prompt(R"({"image": 4, "video": 1})", c);
  EXPECT_EQ(c.limit_images, 4);
  EXPECT_EQ(c.limit_videos, 1);
  EXPECT_THROW(parse_limit_mm_per_prompt(R"({"audio": 1})", c), Error);
  EXPECT_THROW(parse_limit_mm_per_prompt("4", c), Error);
  EXPECT_THROW(parse_limit_mm_per_prompt(R"({"image": -1})", c), Error);
}

}  // namespace
}  // namespace vtllm::server
