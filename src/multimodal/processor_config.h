// Image and video processor settings from a checkpoint folder, as transformers 5.17 loads
// them: `preprocessor_config.json` (Qwen2VLImageProcessor), `video_preprocessor_config.json`
// (Qwen3VLVideoProcessor) or transformers 5's `processor_config.json`, which nests both under
// "image_processor" / "video_processor". Fields a file leaves out keep the class defaults.
// Then vLLM's `--mm-processor-kwargs` (a JSON object) overrides them.
//
// Thread-safety: plain values; the functions are pure.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vtllm::multimodal {

// Qwen2VLImageProcessor (torchvision backend). Defaults are the class's own; Qwen3.5's
// preprocessor_config.json sets min/max pixels 65536 / 16777216, patch 16, mean = std = 0.5.
struct ImageProcessorConfig {
  int64_t min_pixels = 56 * 56;         // size.shortest_edge (a pixel count, not an edge)
  int64_t max_pixels = 28 * 28 * 1280;  // size.longest_edge
  int64_t patch_size = 14;
  int64_t temporal_patch_size = 2;
  int64_t merge_size = 2;
  std::array<double, 3> image_mean = {0.48145466, 0.4578275, 0.40821073};  // OPENAI_CLIP_MEAN
  std::array<double, 3> image_std = {0.26862954, 0.26130258, 0.27577711};  // OPENAI_CLIP_STD
  double rescale_factor = 1.0 / 255.0;
  bool do_resize = true, do_rescale = true, do_normalize = true, do_convert_rgb = true;
  int resample = 3;  // PIL BICUBIC, the only one implemented

  int64_t factor() const { return patch_size * merge_size; }
};

// Qwen3VLVideoProcessor: the image fields (its own defaults) plus frame sampling.
struct VideoProcessorConfig {
  VideoProcessorConfig();  // the class defaults: 128*32*32 ... 768*32*32 pixels, patch 16, 0.5

  ImageProcessorConfig frame;
  double fps = 2.0;                   // target frames per second when sampling
  std::optional<int64_t> num_frames;  // a fixed frame count instead of fps
  int64_t min_frames = 4, max_frames = 768;
  bool do_sample_frames = true;
};

struct ProcessorConfig {
  ImageProcessorConfig image;
  VideoProcessorConfig video;
};

// Applies one processor JSON object (the text of preprocessor_config.json, or the
// "image_processor" member of processor_config.json) over `cfg`. Unknown keys are ignored as
// transformers ignores them; wrong types and values are errors naming `origin` and the key.
void apply_image_processor_json(ImageProcessorConfig& cfg, std::string_view json_text,
                                std::string_view origin);
// Likewise for a video processor object (video_preprocessor_config.json).
void apply_video_processor_json(VideoProcessorConfig& cfg, std::string_view json_text,
                                std::string_view origin);

// Reads DIR's processor files: processor_config.json's nested objects first, then
// preprocessor_config.json / video_preprocessor_config.json where present (transformers
// prefers the standalone files when both exist). Missing files leave class defaults; a video
// processor without its own file takes the image file's fields, as transformers 5 does when
// it builds the video processor from preprocessor_config.json.
ProcessorConfig load_processor_config(const std::string& dir);

// Applies vLLM's --mm-processor-kwargs (a JSON object) as call-time processor kwargs: each key
// goes to every processor that takes it (min_pixels, max_pixels, size, patch_size,
// temporal_patch_size, merge_size, image_mean, image_std, do_resize, do_rescale,
// do_normalize, rescale_factor to both; fps, num_frames, min_frames, max_frames,
// do_sample_frames to the video processor); "images_kwargs" / "videos_kwargs" objects target
// one. An unknown key is an error naming it; fps together with num_frames is an error.
void apply_mm_processor_kwargs(ProcessorConfig& cfg, std::string_view json_text);

}  // namespace vtllm::multimodal
