#include "multimodal/processor_config.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "base/file.h"
#include "base/json.h"

namespace vtllm::multimodal {
namespace {

constexpr int64_t kMaxPixelsBound = int64_t{1} << 40;

std::array<double, 3> read_triple(const JsonFields& f, std::string_view key) {
  const Json* v = f.raw(key);
  if (v->is_number()) {
    double x = v->get<double>();
    return {x, x, x};
  }
  if (!v->is_array() || v->size() != 3) f.fail(key, "expected a number or a list of 3 numbers");
  std::array<double, 3> out{};
  for (size_t i = 0; i < 3; ++i) out[i] = json_number((*v)[i], f.at(key).index(i));
  return out;
}

// The fields every image-like processor reads (image, and each video frame).
void apply_image_fields(ImageProcessorConfig& c, const JsonFields& f) {
  if (auto size = f.child("size")) {
    auto lo = size->opt_int("shortest_edge", 1, kMaxPixelsBound);
    auto hi = size->opt_int("longest_edge", 1, kMaxPixelsBound);
    if (!lo || !hi)
      f.fail("size", "must contain 'shortest_edge' and 'longest_edge' (pixel counts)");
    c.min_pixels = *lo;
    c.max_pixels = *hi;
  }
  // min_pixels / max_pixels override size (Qwen2VLImageProcessor's backward compatibility).
  if (auto v = f.opt_int("min_pixels", 1, kMaxPixelsBound)) c.min_pixels = *v;
  if (auto v = f.opt_int("max_pixels", 1, kMaxPixelsBound)) c.max_pixels = *v;
  if (auto v = f.opt_int("patch_size", 1, 1024)) c.patch_size = *v;
  if (auto v = f.opt_int("temporal_patch_size", 1, 64)) c.temporal_patch_size = *v;
  if (auto v = f.opt_int("merge_size", 1, 64)) c.merge_size = *v;
  if (f.has("image_mean")) c.image_mean = read_triple(f, "image_mean");
  if (f.has("image_std")) {
    c.image_std = read_triple(f, "image_std");
    for (double s : c.image_std)
      if (!(s != 0.0)) f.fail("image_std", "must not contain 0");
  }
  if (auto v = f.opt_double("rescale_factor")) c.rescale_factor = *v;
  if (auto v = f.opt_bool("do_resize")) c.do_resize = *v;
  if (auto v = f.opt_bool("do_rescale")) c.do_rescale = *v;
  if (auto v = f.opt_bool("do_normalize")) c.do_normalize = *v;
  if (auto v = f.opt_bool("do_convert_rgb")) c.do_convert_rgb = *v;
  if (auto v = f.opt_int("resample", 0, 5)) {
    if (*v != 3) f.fail("resample", str_cat(*v, " is not supported (only 3, BICUBIC)"));
    c.resample = int(*v);
  }
  if (c.min_pixels > c.max_pixels)
    f.fail("size", str_cat("min pixels ", c.min_pixels, " exceed max pixels ", c.max_pixels));
}

void apply_video_fields(VideoProcessorConfig& c, const JsonFields& f) {
  apply_image_fields(c.frame, f);
  if (auto v = f.opt_double("fps")) {
    if (!(*v > 0.0)) f.fail("fps", "must be positive");
    c.fps = *v;
  }
  if (auto v = f.opt_int("num_frames", 1, 1 << 20)) c.num_frames = *v;
  if (auto v = f.opt_int("min_frames", 1, 1 << 20)) c.min_frames = *v;
  if (auto v = f.opt_int("max_frames", 1, 1 << 20)) c.max_frames = *v;
  if (auto v = f.opt_bool("do_sample_frames")) c.do_sample_frames = *v;
}

const std::set<std::string, std::less<>> kSharedKwargs = {
    "size",         "patch_size",     "temporal_patch_size", "merge_size",
    "image_mean",   "image_std",      "do_resize",           "do_rescale",
    "do_normalize", "rescale_factor", "do_convert_rgb"};
const std::set<std::string, std::less<>> kImageOnlyKwargs = {"min_pixels", "max_pixels"};
const std::set<std::string, std::less<>> kVideoOnlyKwargs = {"fps", "num_frames", "min_frames",
                                                             "max_frames", "do_sample_frames"};

// The members of `obj` whose key is in one of `allowed`.
Json pick(const Json& obj,
          std::initializer_list<const std::set<std::string, std::less<>>*> allowed) {
  Json out = Json::object();
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (const auto* set : allowed) ok = ok || set->count(it.key()) != 0;
    if (ok) out[it.key()] = it.value();
  }
  return out;
}

// Throws naming every key of `obj` in none of `allowed` / `extra`.
void check_known(const Json& obj,
                 std::initializer_list<const std::set<std::string, std::less<>>*> allowed,
                 std::initializer_list<const char*> extra, const char* where) {
  std::vector<std::string> unknown;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (const auto* set : allowed) ok = ok || set->count(it.key()) != 0;
    for (const char* e : extra) ok = ok || it.key() == e;
    if (!ok) unknown.push_back(it.key());
  }
  if (!unknown.empty()) {
    std::string names;
    for (const auto& u : unknown) names += (names.empty() ? "'" : ", '") + u + "'";
    VT_THROW(where, ": unknown key", unknown.size() > 1 ? "s " : " ", names);
  }
}

void check_frames(const Json& obj, const char* where) {
  auto has = [&](const char* k) { return obj.contains(k) && !obj[k].is_null(); };
  if (has("fps") && has("num_frames"))
    VT_THROW(where, ": 'fps' and 'num_frames' are mutually exclusive");
}

}  // namespace

VideoProcessorConfig::VideoProcessorConfig() {
  frame.min_pixels = 128 * 32 * 32;
  frame.max_pixels = 32 * 32 * 768;
  frame.patch_size = 16;
  frame.image_mean = {0.5, 0.5, 0.5};
  frame.image_std = {0.5, 0.5, 0.5};
}

void apply_image_processor_json(ImageProcessorConfig& cfg, std::string_view json_text,
                                std::string_view origin) {
  Json j = json_parse(json_text, origin);
  apply_image_fields(cfg, JsonFields(j, std::string(origin), ""));
}

void apply_video_processor_json(VideoProcessorConfig& cfg, std::string_view json_text,
                                std::string_view origin) {
  Json j = json_parse(json_text, origin);
  apply_video_fields(cfg, JsonFields(j, std::string(origin), ""));
}

ProcessorConfig load_processor_config(const std::string& dir) {
  namespace fs = std::filesystem;
  ProcessorConfig cfg;
  const fs::path root(dir);
  bool image_set = false, video_set = false;
  std::string image_text;
  if (fs::exists(root / "processor_config.json")) {
    const std::string origin = (root / "processor_config.json").string();
    Json j = json_parse(read_file(root / "processor_config.json"), origin);
    JsonFields f(j, origin, "");
    if (auto ip = f.child("image_processor")) {
      apply_image_fields(cfg.image, *ip);
      image_text = f.raw("image_processor")->dump();
      image_set = true;
    }
    if (auto vp = f.child("video_processor")) {
      apply_video_fields(cfg.video, *vp);
      video_set = true;
    }
  }
  if (fs::exists(root / "preprocessor_config.json")) {
    cfg.image = ImageProcessorConfig();
    image_text = read_file(root / "preprocessor_config.json");
    apply_image_processor_json(cfg.image, image_text, (root / "preprocessor_config.json").string());
    image_set = true;
  }
  if (fs::exists(root / "video_preprocessor_config.json")) {
    cfg.video = VideoProcessorConfig();
    apply_video_processor_json(cfg.video, read_file(root / "video_preprocessor_config.json"),
                               (root / "video_preprocessor_config.json").string());
    video_set = true;
  }
  if (!video_set && image_set)
    apply_video_processor_json(cfg.video, image_text, (root / "preprocessor_config.json").string());
  return cfg;
}

void apply_mm_processor_kwargs(ProcessorConfig& cfg, std::string_view json_text) {
  const char* where = "--mm-processor-kwargs";
  Json j = json_parse(json_text, where);
  if (!j.is_object()) VT_THROW(where, ": expected a JSON object, got ", json_type_name(j));
  check_known(j, {&kSharedKwargs, &kImageOnlyKwargs, &kVideoOnlyKwargs},
              {"images_kwargs", "videos_kwargs"}, where);
  check_frames(j, where);
  Json image = pick(j, {&kSharedKwargs, &kImageOnlyKwargs});
  Json video = pick(j, {&kSharedKwargs, &kVideoOnlyKwargs});
  if (j.contains("images_kwargs")) {
    const JsonPath at(where, "images_kwargs");  // named: json_object returns its argument
    const Json& ik = json_object(j["images_kwargs"], at);
    check_known(ik, {&kSharedKwargs, &kImageOnlyKwargs}, {},
                "--mm-processor-kwargs: images_kwargs");
    for (auto it = ik.begin(); it != ik.end(); ++it) image[it.key()] = it.value();
  }
  if (j.contains("videos_kwargs")) {
    const JsonPath at(where, "videos_kwargs");
    const Json& vk = json_object(j["videos_kwargs"], at);
    check_known(vk, {&kSharedKwargs, &kVideoOnlyKwargs}, {},
                "--mm-processor-kwargs: videos_kwargs");
    check_frames(vk, "--mm-processor-kwargs: videos_kwargs");
    for (auto it = vk.begin(); it != vk.end(); ++it) video[it.key()] = it.value();
  }
  check_frames(video, where);
  ProcessorConfig next = cfg;  // all or nothing
  apply_image_fields(next.image, JsonFields(image, where, ""));
  // A call-time fps replaces a configured frame count (and num_frames replaces fps).
  if (video.contains("fps") && !video["fps"].is_null()) next.video.num_frames.reset();
  apply_video_fields(next.video, JsonFields(video, where, ""));
  cfg = next;
}

}  // namespace vtllm::multimodal
