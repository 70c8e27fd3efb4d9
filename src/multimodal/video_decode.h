// Video decoding from memory through libavformat / libavcodec / libswscale (qwen3_5.md §14).
//
// The metadata follows transformers 5.17's default video loader for Qwen3VLVideoProcessor
// (video_utils.load_video with backend "torchcodec", VideoDecoder(seek_mode="exact")):
// total_frames is the number of packets of the best video stream found by scanning the
// whole file, and fps is total_frames over the content duration (the largest pts + duration
// minus the smallest pts), falling back to the stream's avg_frame_rate, then r_frame_rate.
// The other loaders (OpenCV, PyAV, decord) report the stream's avg_frame_rate instead:
// stream_fps. Frame i is the i-th frame in presentation order. Pixels are converted to
// RGB24 by libswscale at the frame's own size with SWS_BICUBIC (it matters only where
// swscale cannot take its unscaled path, e.g. odd heights), the colour matrix the frame
// declares (BT.601 when unspecified, as sws_getCoefficients) and its range (limited unless
// the frame or its pixel format says full): the conversion of OpenCV's FFmpeg reader and
// of the ffmpeg CLI, checked pixel-exact against OpenCV 5.0 (FFmpeg 8) on every test clip.
// A display rotation of a quarter turn (phones' portrait clips) is applied after the
// conversion, as the ffmpeg CLI's autorotate and OpenCV's CAP_PROP_ORIENTATION_AUTO do:
// width, height and frames are as displayed.
//
// Every function is reentrant: it owns its libav contexts, so different threads may decode
// different (or the same) bytes at once. libav's own logging is silenced once per process.
// Every failure (corrupt, truncated, unsupported codec, no video stream, zero frames, a
// limit exceeded) throws MediaError naming the problem.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "multimodal/image.h"
#include "multimodal/media_error.h"

namespace vtllm::multimodal {

// Bounds on what a video may cost. Header fields are checked before any frame is decoded;
// the packet scan stops as soon as max_frames is passed, and max_duration_s applies to the
// scanned timestamp span as well.
struct VideoLimits {
  int64_t max_bytes = int64_t{1} << 30;         // encoded size
  int64_t max_pixels = int64_t{4096} * 4096;    // width * height of one frame
  int64_t max_frames = 1 << 20;                 // frames in the stream
  double max_duration_s = 4.0 * 3600;           // seconds of video
  int64_t max_output_bytes = int64_t{4} << 30;  // RGB bytes of all requested frames together
  // libavcodec threads for one video (0: one per core). Frames are the same for any count;
  // 1 suits a pool that decodes many videos at once, more cuts one long video's latency.
  int decoder_threads = 1;
};

// What the loader reports about a video (transformers' VideoMetadata).
struct VideoInfo {
  int64_t width = 0, height = 0;  // of the frames as displayed (after the rotation)
  double fps = 0;                 // frames per second (see above); 0 when the file gives none
  double stream_fps = 0;          // the stream's avg_frame_rate, else r_frame_rate; 0 if neither
  int64_t total_frames = 0;       // > 0
  double duration = 0;            // seconds from the first frame's start to the last one's end
  std::string codec;              // libavcodec's decoder name, e.g. "h264"
  std::string container;          // libavformat's demuxer name, e.g. "matroska,webm"
};

// A probe plus the decoded frames at the chosen indices.
struct DecodedVideo {
  VideoInfo info;
  std::vector<int64_t> indices;  // as chosen, one frame per entry
  std::vector<Image> frames;     // frames[k] is frame indices[k], info.width x info.height
};

// Chooses the frame indices to decode from the probe (e.g. the §14.1 sampler): sorted
// ascending (repeats allowed), each in [0, info.total_frames).
using FrameChooser = std::function<std::vector<int64_t>(const VideoInfo&)>;

// True when vtllm was built with libav* (CMake VTLLM_VIDEO); otherwise every function
// below throws MediaError "video input needs vtllm built with libavformat (VTLLM_VIDEO)".
bool video_decode_available();

// Reads the container and scans every packet of the best video stream; decodes nothing
// beyond what libavformat needs to find the stream's parameters.
VideoInfo probe_video(std::span<const uint8_t> bytes, const VideoLimits& limits = {});

// Probes, asks choose for the indices, and decodes the stream in order up to the last of
// them, converting only the chosen frames (memory: the decoder's references plus the
// output). Throws MediaError when an index is out of range or the stream ends before it.
DecodedVideo decode_video(std::span<const uint8_t> bytes, const FrameChooser& choose,
                          const VideoLimits& limits = {});

// decode_video with fixed indices (sorted ascending, repeats allowed).
std::vector<Image> decode_video_frames(std::span<const uint8_t> bytes,
                                       std::span<const int64_t> indices,
                                       const VideoLimits& limits = {});

}  // namespace vtllm::multimodal
