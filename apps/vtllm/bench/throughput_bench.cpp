#include "bench/throughput_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "base/error.h"
#include "engine/engine_builder.h"
#include "engine/model_runner.h"
#include "models/registry.h"
#include "vt/profile.h"

namespace vtllm::bench {

namespace {
bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
}  // namespace

ModelCost model_cost(const io::ModelConfig& config, vt::DType weight_dtype, vt::DType kv_dtype) {
  const io::TextConfig& t = config.text;
  ModelCost c;
  const double item = double(vt::dtype_size(weight_dtype));
  const bool tied = config.tie_word_embeddings || t.tie_word_embeddings;
  double params = 0, expert_params = 0;
  for (const io::ParamSpec& s : models::declare_params(config, true)) {
    const double n = double(s.numel());
    if (ends_with(s.name, "embed_tokens.weight") && !tied) {
      c.embed_row_bytes = double(t.hidden_size) * item;
      continue;  // gathered, not multiplied
    }
    if (s.name.find(".experts.") != std::string::npos) expert_params += n;
    params += n;
  }
  c.weight_bytes = params * item;
  c.expert_bytes = expert_params * item;
  c.matmul_params = params - expert_params;
  if (t.moe) {
    c.num_experts = t.moe->num_experts;
    c.experts_per_tok = t.moe->num_experts_per_tok;
    c.matmul_params += expert_params * double(c.experts_per_tok) / double(c.num_experts);
  } else {
    c.matmul_params += expert_params;
  }
  c.attn_layers = t.count_layers(io::LayerType::kFullAttention) +
                  t.count_layers(io::LayerType::kSlidingAttention);
  c.q_heads = t.num_attention_heads;
  c.kv_heads = t.num_key_value_heads;
  c.head_dim = t.head_dim;
  c.kv_item = int64_t(vt::dtype_size(kv_dtype));
  c.gdn_layers = t.count_layers(io::LayerType::kLinearAttention);
  if (t.linear_attention) {
    const io::LinearAttentionConfig& g = *t.linear_attention;
    c.gdn_recurrent = g.num_value_heads * g.key_head_dim * g.value_head_dim;
    c.gdn_state_floats = c.gdn_recurrent + (g.conv_kernel_dim - 1) * g.conv_dim();
  }
  return c;
}

double ModelCost::expected_experts(int64_t tokens) const {
  if (num_experts == 0) return 0;
  const double e = double(num_experts);
  return e * (1.0 - std::pow(1.0 - double(experts_per_tok) / e, double(tokens)));
}

namespace {
// Bytes of MoE experts a step of `tokens` tokens reads: `experts` distinct experts per
// layer (< 0: the uniform-routing expectation).
double experts_read(const ModelCost& c, int64_t tokens, double experts) {
  if (c.num_experts == 0) return c.expert_bytes;
  if (experts < 0) experts = c.expected_experts(tokens);
  return c.expert_bytes * experts / double(c.num_experts);
}
}  // namespace

ModelCost::Step ModelCost::decode(int64_t batch, int64_t context, double experts) const {
  const double b = double(batch), ctx = double(context);
  const double kv_token = 2.0 * double(kv_heads * head_dim * kv_item);  // K and V, one layer
  Step s;
  s.bytes = weight_bytes - expert_bytes + experts_read(*this, batch, experts) +
            b * embed_row_bytes +
            double(attn_layers) * b * (ctx + 1) * kv_token +                // read + write new
            double(gdn_layers) * b * 2.0 * double(gdn_state_floats) * 4.0;  // f32 read + write
  s.flops = 2.0 * matmul_params * b + double(attn_layers) * b * 4.0 * double(q_heads * head_dim) * ctx +
            double(gdn_layers) * b * 6.0 * double(gdn_recurrent);
  return s;
}

ModelCost::Step ModelCost::prefill(int64_t batch, int64_t len, double experts) const {
  const double b = double(batch), l = double(len), tokens = b * l;
  const double kv_token = 2.0 * double(kv_heads * head_dim * kv_item);
  Step s;
  s.bytes = weight_bytes - expert_bytes + experts_read(*this, batch * len, experts) +
            tokens * embed_row_bytes + double(attn_layers) * tokens * kv_token +
            double(gdn_layers) * b * double(gdn_state_floats) * 4.0;
  s.flops = 2.0 * matmul_params * tokens +
            double(attn_layers) * b * 4.0 * double(q_heads * head_dim) * l * (l + 1) / 2.0 +
            double(gdn_layers) * tokens * 6.0 * double(gdn_recurrent);
  return s;
}

namespace {

constexpr int kBlockSize = 16;
constexpr int kDecodeWarmup = 2;

// Requests r = 0.. own blocks [1 + r * blocks_per_req, ...) and state slot r.
struct Layout {
  int32_t blocks_per_req = 0;
  int32_t block(int32_t r, int64_t pos) const {
    return 1 + r * blocks_per_req + int32_t(pos / kBlockSize);
  }
  void add_table(engine::StepPlan& fb, int32_t r) const {
    for (int32_t i = 0; i < blocks_per_req; ++i) fb.block_table.push_back(1 + r * blocks_per_req + i);
  }
};

engine::StepPlan new_batch(const Layout& lay) {
  engine::StepPlan fb;
  fb.block_size = kBlockSize;
  fb.max_blocks_per_seq = lay.blocks_per_req;
  fb.query_start_loc.push_back(0);
  return fb;
}

// Appends request r's tokens `ids` at positions [context, context + ids.size()).
void add_request(engine::StepPlan& fb, const Layout& lay, int32_t r, int64_t context,
                 const std::vector<int32_t>& ids) {
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t pos = context + int64_t(i);
    fb.token_ids.push_back(ids[i]);
    fb.positions.push_back(pos);
    fb.slot_mapping.push_back(int64_t(lay.block(r, pos)) * kBlockSize + pos % kBlockSize);
  }
  lay.add_table(fb, r);
  fb.query_start_loc.push_back(int32_t(fb.token_ids.size()));
  fb.seq_lens.push_back(int32_t(context + int64_t(ids.size())));
  fb.context_lens.push_back(int32_t(context));
  fb.state_slots.push_back(r);
  fb.logits_indices.push_back(int32_t(fb.token_ids.size()) - 1);
  fb.logits_requests.push_back(int32_t(fb.seq_lens.size()) - 1);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

template <class F>
double time_ms(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

ThroughputRow finish_row(ThroughputRow r, const std::vector<double>& ms) {
  r.steps = int(ms.size());
  r.step_ms = median(ms);
  r.step_ms_min = *std::min_element(ms.begin(), ms.end());
  r.step_ms_max = *std::max_element(ms.begin(), ms.end());
  r.tokens_per_s = double(r.tokens_per_step) / (r.step_ms * 1e-3);
  return r;
}

constexpr int kExpertProbeSteps = 4;  // decode rows of MoE models

// profile_steps on the runner's stream (so the runner replays no graph).
std::unique_ptr<vt::Profiler> profile_steps(engine::ModelRunner& runner,
                                            const vt::ProfileConfig& pc, int steps, bool warmup,
                                            const std::function<void()>& run_step) {
  return bench::profile_steps(runner.stream(), pc, steps, warmup, run_step);
}

}  // namespace

std::unique_ptr<vt::Profiler> profile_steps(vt::Stream& s, const vt::ProfileConfig& pc, int steps,
                                            bool warmup, const std::function<void()>& run_step) {
  auto p = std::make_unique<vt::Profiler>(pc);
  p->attach(s);  // until detach(), or the destructor if a step throws
  for (int i = 0; i < steps + (warmup ? 1 : 0); ++i) {
    p->begin_step(s);
    run_step();
    p->end_step(s);
    if (warmup && i == 0) p->reset();
  }
  p->detach();
  return p;
}

OpBreakdown breakdown_of(const vt::Profiler& p) {
  OpBreakdown b;
  b.steps = int(p.steps());
  const double n = double(std::max<int64_t>(1, p.steps()));
  b.step_us = p.step_us() / n;
  std::map<std::pair<std::string, std::string>, size_t> op_index;
  std::map<int64_t, size_t> layer_index;
  for (const vt::Profiler::OpStat& st : p.ops()) {
    auto [it, added] = op_index.try_emplace({st.region, st.op}, b.ops.size());
    if (added) b.ops.push_back({st.region, st.op});
    OpBreakdown::Op& o = b.ops[it->second];
    o.calls += double(st.calls) / n;
    o.us += st.us / n;
    o.bytes += st.bytes / n;
    o.flops += st.flops / n;
    if (st.layer < 0) continue;
    auto [lt, ladded] = layer_index.try_emplace(st.layer, b.layers.size());
    if (ladded) b.layers.push_back({st.layer, ""});
    OpBreakdown::Layer& l = b.layers[lt->second];
    l.us += st.us / n;
    const std::string tag = "+" + l.regions + "+";
    if (tag.find("+" + st.region + "+") == std::string::npos)
      l.regions += (l.regions.empty() ? "" : "+") + st.region;
  }
  std::stable_sort(b.ops.begin(), b.ops.end(),
                   [](const OpBreakdown::Op& x, const OpBreakdown::Op& y) { return x.us > y.us; });
  std::sort(
      b.layers.begin(), b.layers.end(),
      [](const OpBreakdown::Layer& x, const OpBreakdown::Layer& y) { return x.layer < y.layer; });
  return b;
}

namespace {

ExpertCounts experts_of(const vt::Profiler& p, const ModelCost& cost, int64_t tokens) {
  ExpertCounts e;
  e.steps = int(p.steps());
  e.experts = cost.num_experts;
  e.expected = cost.expected_experts(tokens);
  const auto& r = p.routing();
  VT_REQUIRE(!r.empty(), "bench throughput: the MoE probe step recorded no routing");
  e.min = r[0].distinct;
  e.max = r[0].distinct;
  double sum = 0;
  for (const vt::Profiler::RoutingStat& x : r) {
    VT_REQUIRE(x.tokens == tokens, "bench throughput: a routing call of ", x.tokens,
               " tokens in a step of ", tokens);
    sum += double(x.distinct);
    e.min = std::min(e.min, x.distinct);
    e.max = std::max(e.max, x.distinct);
  }
  e.mean = sum / double(r.size());
  return e;
}

}  // namespace

double OpBreakdown::op_us() const {
  double t = 0;
  for (const Op& o : ops) t += o.us;
  return t;
}

ThroughputResult run_throughput(const ThroughputConfig& c,
                                const std::function<void(const ThroughputRow&)>& on_row) {
  VT_REQUIRE(!c.batches.empty(), "bench throughput: no batch sizes");
  VT_REQUIRE(c.input_len > 0 && c.output_len > 0 && c.repeats > 0,
           "bench throughput: --input-len, --output-len and --repeats must be > 0");
  VT_REQUIRE(!c.profile_ops || c.profile_steps > 0,
             "bench throughput: --profile-steps must be > 0");
  const io::ModelConfig config = models::load_model_config(c.dir);  // sizes the layout
  const int max_batch = *std::max_element(c.batches.begin(), c.batches.end());
  int64_t max_prefill = 0;
  for (int64_t l : c.prefill_lens) max_prefill = std::max(max_prefill, l);
  // Decode rows' untimed extra steps: the MoE probe and the profiled steps (+ warm-up).
  const int64_t extra = kExpertProbeSteps + (c.profile_ops ? c.profile_steps + 1 : 0);
  const int64_t max_len = std::max(
      max_prefill, c.input_len + (c.prefill_only ? 0 : c.output_len + kDecodeWarmup + extra));
  Layout lay;
  lay.blocks_per_req = int32_t((max_len + kBlockSize - 1) / kBlockSize);
  // Prefill of the decode rows goes in steps of whole prompts of up to this many tokens.
  const int64_t chunk = std::max<int64_t>(c.input_len, 8192);
  const int64_t step_tokens =
      c.prefill_only ? int64_t(max_batch) * c.input_len
                     : std::min<int64_t>(int64_t(max_batch) * c.input_len,
                                         chunk / c.input_len * c.input_len);

  // The engine builder serve and generate use: dummy or real weights, the cache sized
  // from memory on CUDA (on the CPU, blocks for the largest batch), graphs up to 64.
  engine::EngineArgs args;
  args.dir = c.dir;
  args.load_format = c.load_format;
  args.dummy_seed = c.seed;
  args.device = c.device;
  args.gpu_memory_utilization = c.gpu_memory_utilization;
  args.enforce_eager = c.enforce_eager;
  args.max_num_seqs = max_batch;
  args.max_num_batched_tokens = std::max({step_tokens, int64_t(max_batch), max_prefill});
  args.enable_prefix_caching = false;
  if (c.device.is_cpu()) args.num_gpu_blocks_override = max_batch * lay.blocks_per_req;
  args.quiet = true;

  ThroughputResult res;
  res.device = c.device.str();
  const auto t0 = std::chrono::steady_clock::now();
  engine::EngineParts parts = engine::build_engine(args);
  std::unique_ptr<engine::ModelRunner> runner = std::move(parts.runner);
  VT_REQUIRE(runner->kv_config().block_size == kBlockSize, "bench throughput: the engine's blocks hold ",
           runner->kv_config().block_size, " tokens, the layout assumes ", kBlockSize);
  res.load_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (runner->cache_plan()) res.cache_plan = runner->cache_plan()->describe();
  VT_REQUIRE(runner->kv_config().num_blocks >= 1 + max_batch * lay.blocks_per_req,
           "bench throughput: the KV cache holds ", runner->kv_config().num_blocks - 1,
           " blocks; batch ", max_batch, " x ", max_len, " tokens needs ",
           max_batch * lay.blocks_per_req);
  const vt::DType dtype = runner->model().dtype();
  res.cost = model_cost(config, dtype, dtype);
  for (const io::ParamSpec& s : models::declare_params(config, true)) res.parameters += s.numel();
  res.model = str_cat(config.architecture_class, ", ", config.text.num_hidden_layers, " layers (",
                      res.cost.attn_layers, " attention, ", res.cost.gdn_layers, " GDN), hidden ",
                      config.text.hidden_size, ", ", vt::dtype_name(dtype));

  const int64_t vocab = runner->vocab_size();
  std::mt19937_64 rng(c.seed);
  std::uniform_int_distribution<int32_t> tok(0, int32_t(std::min<int64_t>(vocab, 100000) - 1));
  auto prompt = [&] {
    std::vector<int32_t> p(size_t(c.input_len));
    for (int32_t& t : p) t = tok(rng);
    return p;
  };

  auto prefill_row = [&](int b, int64_t len) {
    engine::StepPlan fb = new_batch(lay);
    for (int r = 0; r < b; ++r) {
      std::vector<int32_t> p(static_cast<size_t>(len));
      for (int32_t& t : p) t = tok(rng);
      add_request(fb, lay, r, 0, p);
    }
    runner->execute_greedy(fb);  // warm-up
    std::vector<double> ms;
    for (int i = 0; i < c.repeats; ++i) ms.push_back(time_ms([&] { runner->execute_greedy(fb); }));
    ThroughputRow row;
    row.phase = "prefill";
    row.batch = b;
    row.tokens_per_step = int64_t(b) * len;
    row.context = double(len);
    double experts = -1;
    if (res.cost.num_experts > 0) {
      vt::ProfileConfig pc;
      pc.count_experts = true;
      row.experts =
          experts_of(*profile_steps(*runner, pc, 1, false, [&] { runner->execute_greedy(fb); }),
                     res.cost, row.tokens_per_step);
      experts = row.experts->mean;
    }
    if (c.profile_ops) {
      vt::ProfileConfig pc;
      pc.time_ops = true;
      row.breakdown = breakdown_of(
          *profile_steps(*runner, pc, c.profile_steps, true, [&] { runner->execute_greedy(fb); }));
    }
    const ModelCost::Step s = res.cost.prefill(b, len, experts);
    row.bytes = s.bytes;
    row.flops = s.flops;
    res.rows.push_back(finish_row(row, ms));
    on_row(res.rows.back());
  };
  if (c.prefill_only) {
    for (int b : c.batches) prefill_row(b, c.input_len);
    return res;
  }

  // Prefill every request once (untimed), in steps of whole prompts.
  std::vector<int32_t> first(static_cast<size_t>(max_batch));
  for (int r0 = 0; r0 < max_batch;) {
    engine::StepPlan fb = new_batch(lay);
    int r = r0;
    for (; r < max_batch && int64_t(r - r0 + 1) * c.input_len <= std::max(step_tokens, c.input_len); ++r)
      add_request(fb, lay, r, 0, prompt());
    const std::vector<int32_t> ids = runner->execute_greedy(fb);
    std::copy(ids.begin(), ids.end(), first.begin() + r0);
    r0 = r;
  }
  for (int b : c.batches) {
    std::vector<int32_t> next(first.begin(), first.begin() + b);
    int64_t context = c.input_len;  // rewound: every row starts from the prefilled KV
    // One decode step of the b requests at `context`.
    auto step = [&] {
      engine::StepPlan fb = new_batch(lay);
      for (int r = 0; r < b; ++r) add_request(fb, lay, r, context, {next[size_t(r)]});
      next = runner->execute_greedy(fb);
      ++context;
    };
    std::vector<double> ms;
    std::vector<int64_t> keys;  // per timed step
    for (int64_t i = 0; i < kDecodeWarmup + c.output_len; ++i) {
      const int64_t ctx = context;
      const double t = time_ms(step);
      if (i < kDecodeWarmup) continue;
      ms.push_back(t);
      keys.push_back(ctx + 1);
    }
    ThroughputRow row;
    row.phase = "decode";
    row.batch = b;
    row.tokens_per_step = b;
    double experts = -1;
    if (res.cost.num_experts > 0) {
      vt::ProfileConfig pc;
      pc.count_experts = true;
      row.experts =
          experts_of(*profile_steps(*runner, pc, kExpertProbeSteps, false, step), res.cost, b);
      experts = row.experts->mean;
    }
    if (c.profile_ops) {
      vt::ProfileConfig pc;
      pc.time_ops = true;
      row.breakdown = breakdown_of(*profile_steps(*runner, pc, c.profile_steps, true, step));
    }
    double bytes = 0, flops = 0, sum_keys = 0;
    for (int64_t k : keys) {
      const ModelCost::Step s = res.cost.decode(b, k, experts);
      bytes += s.bytes;
      flops += s.flops;
      sum_keys += double(k);
    }
    row.context = sum_keys / double(ms.size());
    row.bytes = bytes / double(ms.size());
    row.flops = flops / double(ms.size());
    // The graph this batch replayed: the smallest captured size that holds it.
    for (const engine::DecodeGraphs::GraphKernels& g : runner->graph_kernel_counts())
      if (g.batch >= b && (row.graph_batch == 0 || g.batch < row.graph_batch)) {
        row.graph_batch = g.batch;
        row.graph_kernels = g.kernels;
      }
    res.rows.push_back(finish_row(row, ms));
    on_row(res.rows.back());
  }
  for (int64_t len : c.prefill_lens) prefill_row(1, len);
  for (const engine::DecodeGraphs::GraphKernels& g : runner->graph_kernel_counts())
    res.graphs.push_back({g.batch, g.kernels});
  return res;
}

void print_throughput_header(std::FILE* f) {
  std::fprintf(f, "%-8s %5s %8s %8s %9s %11s %9s %6s %8s %6s %5s %7s\n", "phase", "batch",
               "tok/step", "context", "step ms", "tok/s", "GB/s", "of BW", "TFLOP/s", "of PK",
               "graph", "kernels");
}

namespace {

void print_experts(std::FILE* f, const ExpertCounts& e) {
  std::fprintf(f,
               "  experts touched per layer (router's choices, %d probe steps): mean %.1f, min "
               "%lld, max %lld of %lld; uniform routing expects %.1f; the row's bytes count "
               "the measured mean\n",
               e.steps, e.mean, (long long)e.min, (long long)e.max, (long long)e.experts,
               e.expected);
}

}  // namespace

void print_breakdown(std::FILE* f, const OpBreakdown& b) {
  const double op_us = b.op_us();
  std::fprintf(f,
               "  op breakdown: %d eager steps (graph capture off while profiling), step %.1f "
               "us, ops %.1f us = %.1f%%, the rest host work and gaps between ops\n",
               b.steps, b.step_us, op_us, b.step_us > 0 ? 100.0 * op_us / b.step_us : 0.0);
  std::fprintf(f, "  %-8s %-28s %8s %11s %7s %9s %6s %8s %6s\n", "region", "op", "calls",
               "total us", "of step", "GB/s", "of BW", "TFLOP/s", "of PK");
  for (const OpBreakdown::Op& o : b.ops) {
    std::fprintf(f, "  %-8s %-28s %8.1f %11.1f %6.1f%%", o.region.c_str(), o.op.c_str(), o.calls,
                 o.us, b.step_us > 0 ? 100.0 * o.us / b.step_us : 0.0);
    if (o.bytes > 0 && o.us > 0) {
      const double gbps = o.bytes / (o.us * 1e-6) / 1e9;
      std::fprintf(f, " %9.1f %5.1f%%", gbps, 100.0 * gbps / kCopyCeilingGBps);
    } else {
      std::fprintf(f, " %9s %6s", "-", "-");
    }
    if (o.flops > 0 && o.us > 0) {
      const double tf = o.flops / (o.us * 1e-6) / 1e12;
      std::fprintf(f, " %8.2f %5.1f%%\n", tf, 100.0 * tf / kBf16CeilingTflops);
    } else {
      std::fprintf(f, " %8s %6s\n", "-", "-");
    }
  }
  std::fprintf(f, "  %-8s %-28s %8s %11.1f %6.1f%%\n", "-", "(host work, gaps)", "-",
               b.step_us - op_us, b.step_us > 0 ? 100.0 * (b.step_us - op_us) / b.step_us : 0.0);
  if (b.layers.empty()) return;
  std::fprintf(f, "  per layer (us, of step):");
  for (size_t i = 0; i < b.layers.size(); ++i) {
    const OpBreakdown::Layer& l = b.layers[i];
    std::fprintf(f, "%s %lld %s %.1f (%.1f%%)", i % 4 == 0 ? "\n   " : ";", (long long)l.layer,
                 l.regions.c_str(), l.us, b.step_us > 0 ? 100.0 * l.us / b.step_us : 0.0);
  }
  std::fprintf(f, "\n");
}

nlohmann::json breakdown_json(const OpBreakdown& b) {
  nlohmann::json j;
  j["steps"] = b.steps;
  j["step_us"] = b.step_us;
  j["op_us"] = b.op_us();
  j["graphs"] = false;
  j["ops"] = nlohmann::json::array();
  for (const OpBreakdown::Op& o : b.ops)
    j["ops"].push_back({{"region", o.region},
                        {"op", o.op},
                        {"calls", o.calls},
                        {"us", o.us},
                        {"bytes", o.bytes},
                        {"flops", o.flops}});
  j["layers"] = nlohmann::json::array();
  for (const OpBreakdown::Layer& l : b.layers)
    j["layers"].push_back({{"layer", l.layer}, {"regions", l.regions}, {"us", l.us}});
  return j;
}

void print_throughput_row(std::FILE* f, const ThroughputRow& r) {
  std::fprintf(f, "%-8s %5d %8lld %8.0f %9.3f %11.1f %9.1f %5.1f%% %8.1f %5.1f%%", r.phase.c_str(),
               r.batch, (long long)r.tokens_per_step, r.context, r.step_ms, r.tokens_per_s, r.gbps(),
               100.0 * r.gbps() / kCopyCeilingGBps, r.tflops(),
               100.0 * r.tflops() / kBf16CeilingTflops);
  if (r.graph_batch > 0)
    std::fprintf(f, " %5d %7lld\n", r.graph_batch, (long long)r.graph_kernels);
  else
    std::fprintf(f, " %5s %7s\n", "-", "-");
  if (r.experts) print_experts(f, *r.experts);
  if (r.breakdown) print_breakdown(f, *r.breakdown);
  std::fflush(f);
}

std::string throughput_json(const ThroughputConfig& c, const ThroughputResult& r) {
  nlohmann::json j;
  j["dir"] = c.dir;
  j["device"] = r.device;
  j["model"] = r.model;
  j["parameters"] = r.parameters;
  j["load_format"] = c.load_format == io::LoadFormat::kDummy ? "dummy" : "auto";
  j["input_len"] = c.input_len;
  j["output_len"] = c.output_len;
  j["prefill_only"] = c.prefill_only;
  j["enforce_eager"] = c.enforce_eager;
  j["profile_ops"] = c.profile_ops;
  j["prefill_lens"] = c.prefill_lens;
  j["load_seconds"] = r.load_seconds;
  j["cache_plan"] = r.cache_plan;
  j["weight_bytes"] = r.cost.weight_bytes;
  j["expert_bytes"] = r.cost.expert_bytes;  // MoE: of weight_bytes, all experts of every layer
  j["ceilings"] = {{"copy_gbps", kCopyCeilingGBps}, {"bf16_tflops", kBf16CeilingTflops}};
  for (const ThroughputRow& x : r.rows) {
    nlohmann::json row = {{"phase", x.phase},
                          {"batch", x.batch},
                          {"tokens_per_step", x.tokens_per_step},
                          {"context", x.context},
                          {"steps", x.steps},
                          {"step_ms", x.step_ms},
                          {"step_ms_min", x.step_ms_min},
                          {"step_ms_max", x.step_ms_max},
                          {"tokens_per_s", x.tokens_per_s},
                          {"bytes", x.bytes},
                          {"flops", x.flops},
                          {"gbps", x.gbps()},
                          {"tflops", x.tflops()},
                          {"graph_batch", x.graph_batch},
                          {"graph_kernels", x.graph_kernels}};
    if (x.experts)
      row["experts"] = {
          {"probe_steps", x.experts->steps}, {"per_layer", x.experts->experts},
          {"mean", x.experts->mean},         {"min", x.experts->min},
          {"max", x.experts->max},           {"uniform_expected", x.experts->expected}};
    if (x.breakdown) row["op_breakdown"] = breakdown_json(*x.breakdown);
    j["rows"].push_back(std::move(row));
  }
  // Kernel nodes of every decode graph captured (kernels launched per decode step).
  j["graphs"] = nlohmann::json::array();
  for (const ThroughputResult::Graph& g : r.graphs)
    j["graphs"].push_back({{"batch", g.batch}, {"kernels", g.kernels}});
  return j.dump(2) + "\n";
}

}  // namespace vtllm::bench
