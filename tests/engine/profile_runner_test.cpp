// vt::Profiler over the model runner on the tiny oracle fixtures: a profiled step names
// every layer's mixer and feed-forward with the ops they issue, its op times fit inside
// the step, and an MoE model's routing is counted once per layer.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "engine/model_runner.h"
#include "io/config.h"
#include "models/registry.h"
#include "vt/profile.h"

namespace vtllm::engine {
namespace {

constexpr int kBlock = 16;

// One prefill step: `requests` prompts of `len` random ids, request r in blocks
// [1 + r * per_req, ...) and state slot r.
StepPlan prefill_plan(int requests, int64_t len, int64_t vocab, uint32_t seed) {
  const int32_t per_req = int32_t((len + kBlock - 1) / kBlock);
  StepPlan fb;
  fb.block_size = kBlock;
  fb.max_blocks_per_seq = per_req;
  fb.query_start_loc.push_back(0);
  std::mt19937 rng(seed);
  for (int r = 0; r < requests; ++r) {
    for (int64_t pos = 0; pos < len; ++pos) {
      fb.token_ids.push_back(int32_t(rng() % uint32_t(vocab)));
      fb.positions.push_back(pos);
      fb.slot_mapping.push_back(int64_t(1 + r * per_req + pos / kBlock) * kBlock + pos % kBlock);
    }
    for (int32_t i = 0; i < per_req; ++i) fb.block_table.push_back(1 + r * per_req + i);
    fb.query_start_loc.push_back(int32_t(fb.token_ids.size()));
    fb.seq_lens.push_back(int32_t(len));
    fb.context_lens.push_back(0);
    fb.state_slots.push_back(r);
    fb.logits_indices.push_back(int32_t(fb.token_ids.size()) - 1);
    fb.logits_requests.push_back(r);
  }
  return fb;
}

class ProfiledStep : public ::testing::TestWithParam<const char*> {};

TEST_P(ProfiledStep, NamesEveryLayersOpsAndFitsInTheStep) {
  const std::string dir = std::string(VTLLM_SOURCE_DIR) + "/" + GetParam();
  const io::ModelConfig config = models::load_model_config(dir);
  const io::TextConfig& t = config.text;
  const int requests = 4;
  const int64_t len = 96;
  KvCacheConfig kv;
  kv.block_size = kBlock;
  kv.num_blocks = 1 + requests * int32_t((len + kBlock - 1) / kBlock);
  kv.num_state_slots = requests;
  auto runner = ModelRunner::load(dir, kv);
  const StepPlan plan = prefill_plan(requests, len, runner->vocab_size(), 11);
  const std::vector<int32_t> plain = runner->execute_greedy(plan);

  vt::ProfileConfig pc;
  pc.time_ops = true;
  pc.count_experts = true;
  vt::Profiler p(pc);
  p.attach(runner->stream());
  p.begin_step(runner->stream());
  const std::vector<int32_t> profiled = runner->execute_greedy(plan);
  p.end_step(runner->stream());
  p.detach();
  EXPECT_EQ(profiled, plain);  // profiling changes no result

  // (region, layer) -> ops seen there.
  std::map<std::pair<std::string, int64_t>, std::set<std::string>> seen;
  double op_us = 0;
  for (const vt::Profiler::OpStat& st : p.ops()) {
    seen[{st.region, st.layer}].insert(st.op);
    EXPECT_GT(st.calls, 0);
    op_us += st.us;
  }
  const char* ffn = t.moe ? "moe" : "mlp";
  for (int64_t i = 0; i < t.num_hidden_layers; ++i) {
    const bool attn = t.layer_types[size_t(i)] == io::LayerType::kFullAttention;
    const std::set<std::string>& mixer = seen[{attn ? "attn" : "gdn", i}];
    SCOPED_TRACE("layer " + std::to_string(i));
    EXPECT_TRUE(mixer.count("linear"));
    EXPECT_TRUE(mixer.count("add_rms_norm"));  // the residual add that ends the half
    if (attn) {
      EXPECT_TRUE(mixer.count("paged_attention"));
      EXPECT_TRUE(mixer.count("attn_qk_norm_rope_gate"));  // the fused preamble, the default
    } else {
      EXPECT_TRUE(mixer.count("causal_conv1d_silu"));
      EXPECT_TRUE(mixer.count("gated_delta_rule_chunked"));
    }
    const std::set<std::string>& f = seen[{ffn, i}];
    EXPECT_TRUE(f.count(t.moe ? "moe_experts_shared" : "silu_and_mul"));
    EXPECT_TRUE(!t.moe || f.count("moe_router"));  // one op: its linear and moe_route inside
    EXPECT_TRUE(f.count("add_rms_norm"));
  }
  // Nothing is named with a layer the model does not have, and the ends are there.
  for (const auto& [key, ops] : seen) EXPECT_LT(key.second, t.num_hidden_layers) << key.first;
  auto has = [&](const char* region, const char* op) {
    return seen[std::make_pair(std::string(region), int64_t(-1))].count(op) == 1;
  };
  EXPECT_TRUE(has("embed", "embedding"));
  EXPECT_TRUE(has("lm_head", "linear"));
  EXPECT_TRUE(has("step", "argmax"));
  // The ops run inside the step on the same clock; the rest is host work between them
  // (index tensors, allocation), a minority of a 384-token prefill.
  EXPECT_LE(op_us, p.step_us());
  EXPECT_GE(op_us, 0.5 * p.step_us()) << op_us << " us of ops in a " << p.step_us() << " us step";

  if (t.moe) {
    ASSERT_EQ(int64_t(p.routing().size()), t.num_hidden_layers);
    for (size_t i = 0; i < p.routing().size(); ++i) {
      const vt::Profiler::RoutingStat& r = p.routing()[i];
      EXPECT_EQ(r.layer, int64_t(i));
      EXPECT_EQ(r.tokens, requests * len);
      EXPECT_EQ(r.experts, t.moe->num_experts);
      // 384 tokens x k picks over E experts: every expert is chosen unless the router
      // never picks one, which a random router does with negligible probability.
      EXPECT_GE(r.distinct, t.moe->num_experts_per_tok);
      EXPECT_LE(r.distinct, r.experts);
    }
  } else {
    EXPECT_TRUE(p.routing().empty());
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ProfiledStep,
                         ::testing::Values("tests/fixtures/qwen3_5-tiny-r2",
                                           "tests/fixtures/qwen3_5_moe-tiny"),
                         [](const auto& info) {
                           std::string n = info.param;
                           n = n.substr(n.rfind('/') + 1);
                           for (char& c : n)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
}  // namespace vtllm::engine
