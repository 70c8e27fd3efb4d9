#include "bench/vision_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "base/error.h"
#include "bench/throughput_bench.h"
#include "bench/vision_media.h"
#include "engine/engine_builder.h"
#include "engine/llm_engine.h"
#include "engine/model_runner.h"
#include "models/registry.h"
#include "multimodal/image.h"
#include "multimodal/image_processor.h"
#include "multimodal/media_pool.h"
#include "multimodal/media_processor.h"
#include "multimodal/prompt_expansion.h"
#include "multimodal/video_processor.h"
#include "vt/ops/copy.h"
#include "vt/profile.h"
#include "vt/stream.h"

namespace vtllm::bench {

double vision_tower_flops(const io::VisionConfig& v, int64_t grid, int64_t n_images) {
  const double n = double(grid * grid);  // patches per image
  const double h = double(v.hidden_size), i = double(v.intermediate_size);
  const double pd = double(v.in_channels * v.temporal_patch_size * v.patch_size * v.patch_size);
  const double m2 = double(v.spatial_merge_size * v.spatial_merge_size);
  double per_image = 2 * n * pd * h;  // patch embedding
  // Per block: qkv, proj, fc1, fc2, and attention over the image's n patches
  // (QK^T and PV: 2 * 2 * n^2 * h).
  per_image += double(v.depth) * (2 * n * h * 3 * h + 2 * n * h * h + 2 * 2 * n * h * i +
                                  4 * n * n * h);
  // Merger: fc1 (m2 h -> m2 h) and fc2 (m2 h -> out) on n / m2 rows.
  per_image += 2 * (n / m2) * (m2 * h) * (m2 * h) + 2 * (n / m2) * (m2 * h) * double(v.out_hidden_size);
  return per_image * double(n_images);
}

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// DIR's processor files, or Qwen3.5's published settings (its preprocessor_config.json and
// video_preprocessor_config.json) on the tower's patch geometry when DIR has none.
multimodal::ProcessorConfig processor_for(const std::string& dir, const io::VisionConfig& v,
                                          bool* from_files) {
  namespace fs = std::filesystem;
  *from_files =
      fs::exists(dir + "/preprocessor_config.json") || fs::exists(dir + "/processor_config.json");
  multimodal::ProcessorConfig pc = multimodal::load_processor_config(dir);
  if (*from_files) return pc;
  for (multimodal::ImageProcessorConfig* f : {&pc.image, &pc.video.frame}) {
    f->patch_size = v.patch_size;
    f->temporal_patch_size = v.temporal_patch_size;
    f->merge_size = v.spatial_merge_size;
    f->image_mean = {0.5, 0.5, 0.5};
    f->image_std = {0.5, 0.5, 0.5};
  }
  pc.image.min_pixels = 65536;
  pc.image.max_pixels = 16777216;
  pc.video.frame.min_pixels = 4096;
  pc.video.frame.max_pixels = 25165824;
  return pc;
}

// in's patch rows on `device` (on the CPU a view of in's memory: keep `in` alive).
vt::Tensor pixels_on(vt::Stream& s, const multimodal::VisionInput& in, vt::Device device) {
  vt::Tensor host = vt::Tensor::from_blob(const_cast<float*>(in.pixel_values.data()),
                                          {in.num_patches(), in.patch_dim}, vt::DType::kF32,
                                          vt::Device::cpu(), nullptr);
  return vt::to_device(s, host, device);
}

// Median ms of `repeats` tower encodes (after one warm-up) of `pixels` over `grids`.
double time_tower(vt::Stream& s, models::VisionTower& tower, const vt::Tensor& pixels,
                  const std::vector<models::VisionGrid>& grids, int repeats) {
  tower.encode(s, pixels, grids);  // warm-up (allocator, cuBLASLt heuristics)
  s.synchronize();
  std::vector<double> ms;
  for (int r = 0; r < repeats; ++r) {
    const auto a = Clock::now();
    tower.encode(s, pixels, grids);
    s.synchronize();
    ms.push_back(ms_since(a));
  }
  return median(ms);
}

json tower_rows(const VisionBenchConfig& c, vt::Stream& s, models::VisionTower& tower,
                const io::VisionConfig& v, int64_t grid) {
  std::printf("vision tower, %lldx%lld images (random pixel values on the device):\n",
              (long long)c.image_size, (long long)c.image_size);
  std::printf("%7s %10s %10s %12s %9s %8s\n", "images", "ms", "images/s", "patches/s", "TFLOP/s",
              "of peak");
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  json rows = json::array();
  for (int b : c.images) {
    VT_REQUIRE(b > 0, "--images: ", b, " is not positive");
    const int64_t patches = int64_t(b) * grid * grid;
    vt::Tensor host = vt::Tensor::empty({patches, tower.patch_dim()}, vt::DType::kF32);
    float* p = host.data<float>();
    for (int64_t k = 0; k < host.numel(); ++k) p[k] = u(rng);
    const vt::Tensor pixels = vt::to_device(s, host, c.device);
    const std::vector<models::VisionGrid> grids(size_t(b), models::VisionGrid{1, grid, grid});
    const double med = time_tower(s, tower, pixels, grids, c.repeats);
    const double tflops = vision_tower_flops(v, grid, b) / (med * 1e-3) / 1e12;
    std::printf("%7d %10.2f %10.1f %12.0f %9.1f %7.1f%%\n", b, med, b / (med * 1e-3),
                double(patches) / (med * 1e-3), tflops, 100.0 * tflops / kBf16CeilingTflops);
    std::fflush(stdout);
    json row = {{"images", b},
                {"ms", med},
                {"images_per_s", b / (med * 1e-3)},
                {"patches_per_s", double(patches) / (med * 1e-3)},
                {"tflops", tflops}};
    if (c.profile_ops) {
      vt::ProfileConfig pc;
      pc.time_ops = true;
      const OpBreakdown br = breakdown_of(
          *profile_steps(s, pc, c.profile_steps, true, [&] { tower.encode(s, pixels, grids); }));
      print_breakdown(stdout, br);
      std::fflush(stdout);
      row["breakdown"] = breakdown_json(br);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

// The chat's token ids before expansion: text, vision_start, image_pad, vision_end, text.
std::vector<int32_t> chat_ids(const multimodal::VisionTokenIds& t, int64_t text_tokens,
                              int64_t vocab, std::mt19937_64& rng) {
  std::uniform_int_distribution<int32_t> tok(0, int32_t(std::min<int64_t>(vocab, 100000) - 1));
  auto text = [&] {
    int32_t id;
    do id = tok(rng);
    while (id == t.image_pad || id == t.video_pad || id == t.vision_start || id == t.vision_end);
    return id;
  };
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < text_tokens / 2; ++i) ids.push_back(text());
  ids.insert(ids.end(), {t.vision_start, t.image_pad, t.vision_end});
  for (int64_t i = text_tokens / 2; i < text_tokens; ++i) ids.push_back(text());
  return ids;
}

// Time to the first token of one chat: runs the engine until the request's first token.
double first_token_ms(engine::LlmEngine& engine, Clock::time_point t0) {
  double ttft = -1;
  while (engine.has_unfinished())
    for (const engine::EngineOutput& o : engine.step())
      if (ttft < 0 && !o.new_token_ids.empty()) ttft = ms_since(t0);
  VT_REQUIRE(ttft >= 0, "bench vision: the chat produced no token");
  return ttft;
}

}  // namespace

std::string run_vision_bench(const VisionBenchConfig& c) {
  VT_REQUIRE(c.repeats > 0, "bench vision: --repeats must be > 0");
  VT_REQUIRE(!c.profile_ops || c.profile_steps > 0, "bench vision: --profile-steps must be > 0");
  const io::ModelConfig config = models::load_model_config(c.dir);
  VT_REQUIRE(config.vision.has_value(), c.dir, ": ", config.architecture_class,
             " has no vision tower");
  const io::VisionConfig& v = *config.vision;
  const int64_t factor = v.patch_size * v.spatial_merge_size;
  VT_REQUIRE(c.image_size > 0 && c.image_size % factor == 0, "--image-size ", c.image_size,
             ": expected a positive multiple of ", factor, " (patch x merge)");
  const int64_t grid = c.image_size / v.patch_size;
  const int64_t merge = v.spatial_merge_size;
  const int64_t image_tokens = grid * grid / (merge * merge);
  const int64_t prompt_len = c.text_tokens + 2 + image_tokens;

  // One engine for every part: the tower rows use its model, the chats its loop.
  engine::EngineArgs args;
  args.dir = c.dir;
  args.load_format = c.load_format;
  args.dummy_seed = c.seed;
  args.device = c.device;
  args.gpu_memory_utilization = c.gpu_memory_utilization;
  args.enforce_eager = true;  // prefill steps never replay decode graphs
  args.max_num_seqs = 4;
  args.max_num_batched_tokens = std::max<int64_t>(2048, prompt_len + 16);
  args.max_model_len = std::max<int64_t>(4096, prompt_len + 16);
  args.allow_long_max_model_len = true;
  args.enable_prefix_caching = false;
  args.state_snapshot_stride = 0;
  // A few chats' blocks on every device: the rest of the memory stays free for the
  // tower rows' and the video's activations (16 images: 65k patches).
  args.num_gpu_blocks_override = 4 * ((args.max_model_len + 15) / 16);
  args.quiet = true;
  const auto t_load = Clock::now();
  engine::EngineParts parts = engine::build_engine(args);
  engine::ModelRunner* runner = parts.runner.get();
  models::VisionTower* tower = runner->model().vision_tower();
  VT_REQUIRE(tower, c.dir, ": the engine built no vision tower");
  vt::Stream& s = runner->stream();
  const double load_s = ms_since(t_load) * 1e-3;
  engine::LlmEngine engine(parts.engine, std::move(parts.runner));

  bool from_files = false;
  const multimodal::ProcessorConfig pc = processor_for(c.dir, v, &from_files);
  std::printf(
      "bench vision: %s on %s, %s, %d blocks x %lld wide, %lld heads, out %lld; "
      "%lldx%lld images = %lld patches, %lld LLM tokens each; loaded in %.1f s; "
      "processor: %s\n",
      c.dir.c_str(), c.device.str().c_str(), config.architecture_class.c_str(), int(v.depth),
      (long long)v.hidden_size, (long long)v.num_heads, (long long)v.out_hidden_size,
      (long long)c.image_size, (long long)c.image_size, (long long)(grid * grid),
      (long long)image_tokens, load_s,
      from_files ? "DIR's files" : "Qwen3.5's published settings (DIR has none)");
  json out;
  out["kind"] = "vision";
  out["dir"] = c.dir;
  out["device"] = c.device.str();
  out["model"] = config.architecture_class;
  out["image_size"] = c.image_size;
  out["patches_per_image"] = grid * grid;
  out["tokens_per_image"] = image_tokens;
  out["processor_from_files"] = from_files;
  out["load_seconds"] = load_s;
  out["bf16_tflops_ceiling"] = kBf16CeilingTflops;
  if (c.tower) out["tower"] = tower_rows(c, s, *tower, v, grid);

  std::mt19937_64 rng(c.seed + 17);
  uint32_t image_seed = uint32_t(c.seed) * 1000 + 1;
  // The chat and video parts process on a media pool of the server's default size, whose
  // loop splits one item's work.
  multimodal::MediaPool media_pool(multimodal::MediaPool::default_size());
  const multimodal::ParallelFor loop = media_pool.parallel_for();
  out["media_pool_threads"] = media_pool.size();
  if (c.ttft) {
    const multimodal::VisionTokenIds ids{
        int32_t(config.image_token_id), int32_t(config.video_token_id),
        int32_t(config.vision_start_token_id), int32_t(config.vision_end_token_id)};
    const multimodal::EncodeText no_text = [](std::string_view) -> std::vector<int32_t> {
      VT_THROW("bench vision: an image chat expands no text");
    };
    engine::SamplingParams sp;
    sp.temperature = 0.0f;
    sp.max_tokens = 1;
    sp.ignore_eos = true;
    const int64_t encoded_before = runner->num_encoded_items();
    int64_t requests = 0, expanded_len = 0;
    // One chat; `bytes` (a JPEG) is processed inside the timed span, or `ready` is used.
    auto chat = [&](const std::vector<uint8_t>* bytes,
                    std::shared_ptr<const multimodal::VisionInput> ready, double* pre_ms) {
      const std::vector<int32_t> raw = chat_ids(ids, c.text_tokens, runner->vocab_size(), rng);
      const auto t0 = Clock::now();
      if (bytes) {
        ready = std::make_shared<const multimodal::VisionInput>(
            multimodal::process_media(multimodal::MediaKind::kImage, *bytes, pc, {}, loop));
        *pre_ms = ms_since(t0);
      }
      const multimodal::VisionInput* item = ready.get();
      const multimodal::ExpandedPrompt e =
          multimodal::expand_prompt(raw, std::span(&item, 1), ids, merge, no_text);
      expanded_len = int64_t(e.ids.size());
      auto mm = engine::make_multimodal_prompt(e, {ready}, ids.pads(), merge);
      engine.add_request("chat" + std::to_string(requests++), e.ids, sp, 0, std::move(mm));
      return first_token_ms(engine, t0);
    };
    std::vector<double> with, without, pre;
    for (int r = 0; r <= c.repeats; ++r) {  // r = 0: warm-up
      const std::vector<uint8_t> jpeg = synth_jpeg(c.image_size, c.image_size, image_seed++);
      double pre_ms = 0;
      const double t = chat(&jpeg, nullptr, &pre_ms);
      if (r > 0) {
        with.push_back(t);
        pre.push_back(pre_ms);
      }
    }
    for (int r = 0; r <= c.repeats; ++r) {
      auto in = std::make_shared<const multimodal::VisionInput>(multimodal::process_media(
          multimodal::MediaKind::kImage, synth_jpeg(c.image_size, c.image_size, image_seed++), pc));
      const double t = chat(nullptr, std::move(in), nullptr);
      if (r > 0) without.push_back(t);
    }
    const int64_t encoded = runner->num_encoded_items() - encoded_before;
    std::printf(
        "chat TTFT, one %lldx%lld JPEG + %lld text tokens = %lld prompt tokens "
        "(median of %d; %lld images encoded for %lld requests):\n"
        "  with processor (JPEG decode + preprocess %.1f ms): %.1f ms\n"
        "  tower + prefill (input already processed):        %.1f ms\n",
        (long long)c.image_size, (long long)c.image_size, (long long)c.text_tokens,
        (long long)expanded_len, c.repeats, (long long)encoded, (long long)requests, median(pre),
        median(with), median(without));
    std::fflush(stdout);
    out["ttft"] = {{"prompt_tokens", expanded_len}, {"text_tokens", c.text_tokens},
                   {"repeats", c.repeats},          {"requests", requests},
                   {"images_encoded", encoded},     {"with_processor_ms", median(with)},
                   {"processor_ms", median(pre)},   {"tower_prefill_ms", median(without)},
                   {"with_processor_all_ms", with}, {"tower_prefill_all_ms", without}};
  }

  if (c.video) {
    const int64_t total = std::max<int64_t>(1, int64_t(c.video_seconds * c.video_source_fps));
    const std::vector<int64_t> idx =
        multimodal::sample_frame_indices(total, c.video_source_fps, pc.video);
    std::vector<multimodal::Image> frames;
    for (int64_t i : idx)
      frames.push_back(synth_frame(c.video_width, c.video_height, i, uint32_t(c.seed)));
    std::vector<double> proc_ms;
    multimodal::VisionInput vin;
    for (int r = 0; r < 2; ++r) {
      const auto t0 = Clock::now();
      vin = multimodal::process_video(frames, idx, c.video_source_fps, pc.video, loop);
      proc_ms.push_back(ms_since(t0));
    }
    const vt::Tensor pixels = pixels_on(s, vin, c.device);
    const double tower_ms =
        time_tower(s, *tower, pixels, {{vin.grid_t, vin.grid_h, vin.grid_w}}, c.repeats);
    const double patches = double(vin.num_patches());
    std::printf(
        "video: %.0f s of %lldx%lld at %.0f fps, %zu frames sampled at %.1f fps -> grid "
        "%lldx%lldx%lld = %.0f patches, %lld LLM tokens:\n"
        "  processor %.1f ms (best of 2, media pool of %d), tower %.1f ms (median of %d), "
        "%.0f patches/s\n",
        c.video_seconds, (long long)c.video_width, (long long)c.video_height, c.video_source_fps,
        idx.size(), pc.video.fps, (long long)vin.grid_t, (long long)vin.grid_h,
        (long long)vin.grid_w, patches, (long long)vin.num_tokens(merge),
        *std::min_element(proc_ms.begin(), proc_ms.end()), media_pool.size(), tower_ms, c.repeats,
        patches / (tower_ms * 1e-3));
    std::fflush(stdout);
    out["video"] = {{"seconds", c.video_seconds},
                    {"width", c.video_width},
                    {"height", c.video_height},
                    {"source_fps", c.video_source_fps},
                    {"sample_fps", pc.video.fps},
                    {"frames", idx.size()},
                    {"grid", {vin.grid_t, vin.grid_h, vin.grid_w}},
                    {"patches", vin.num_patches()},
                    {"tokens", vin.num_tokens(merge)},
                    {"processor_ms", *std::min_element(proc_ms.begin(), proc_ms.end())},
                    {"tower_ms", tower_ms},
                    {"patches_per_s", patches / (tower_ms * 1e-3)}};
  }

  if (c.cpu) {
    std::vector<int> threads = c.cpu_threads;
    if (threads.empty()) threads = {1, int(std::max(1u, std::thread::hardware_concurrency()))};
    std::vector<std::vector<uint8_t>> jpegs;
    for (int i = 0; i < 4; ++i) jpegs.push_back(synth_jpeg(c.image_size, c.image_size, 900 + i));
    std::printf(
        "CPU decode + preprocess of %lldx%lld JPEGs (%zu KB each) on the media pool:\n"
        "%8s %7s %10s %12s %10s\n",
        (long long)c.image_size, (long long)c.image_size, jpegs[0].size() / 1024, "threads",
        "images", "wall ms", "ms/image", "images/s");
    json rows = json::array();
    for (int n : threads) {
      VT_REQUIRE(n > 0, "--cpu-threads: ", n, " is not positive");
      multimodal::MediaPool pool(n);
      const int count = std::max(4, c.images_per_thread * n);
      auto run = [&] {
        std::vector<std::future<std::shared_ptr<const multimodal::VisionInput>>> done;
        for (int i = 0; i < count; ++i) {
          const std::vector<uint8_t>* b = &jpegs[size_t(i) % jpegs.size()];
          done.push_back(pool.submit([b, &pc, pl = pool.parallel_for()] {
            return multimodal::process_media(multimodal::MediaKind::kImage, *b, pc, {}, pl);
          }));
        }
        for (auto& f : done)
          VT_REQUIRE(f.get()->num_patches() == grid * grid, "bench vision: grid");
      };
      run();  // warm-up: threads started, caches warm
      const auto t0 = Clock::now();
      run();
      const double wall = ms_since(t0);
      std::printf("%8d %7d %10.1f %12.2f %10.1f\n", n, count, wall, wall / count,
                  count / (wall * 1e-3));
      std::fflush(stdout);
      rows.push_back({{"threads", n},
                      {"images", count},
                      {"wall_ms", wall},
                      {"ms_per_image", wall / count},
                      {"images_per_s", count / (wall * 1e-3)}});
    }
    out["cpu"] = rows;
    // The serial part of an image's processing: its decode alone, on this thread.
    std::vector<double> decode;
    for (int i = 0; i < 20; ++i) {
      const auto t0 = Clock::now();
      const multimodal::Image img = multimodal::decode_image(jpegs[size_t(i) % jpegs.size()]);
      decode.push_back(ms_since(t0));
      VT_REQUIRE(img.width == c.image_size, "bench vision: decoded width");
    }
    std::printf("  of which JPEG decode alone: %.2f ms per image (one thread, median of 20)\n",
                median(decode));
    out["cpu_decode_ms"] = median(decode);
  }
  return out.dump(2) + "\n";
}

}  // namespace vtllm::bench
