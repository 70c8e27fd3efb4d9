#include "multimodal/video_decode.h"

#include <algorithm>
#include <cstring>

#if VTLLM_WITH_VIDEO
#include <climits>
#include <cmath>
#include <memory>
#include <mutex>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/dict.h>
#include <libavutil/display.h>
#include <libavutil/error.h>
#include <libavutil/log.h>
#include <libavutil/mem.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}
#endif

namespace vtllm::multimodal {

#if !VTLLM_WITH_VIDEO

namespace {
[[noreturn]] void no_video() {
  throw MediaError("video input needs vtllm built with libavformat (VTLLM_VIDEO)");
}
}  // namespace

bool video_decode_available() { return false; }
VideoInfo probe_video(std::span<const uint8_t>, const VideoLimits&) { no_video(); }
DecodedVideo decode_video(std::span<const uint8_t>, const FrameChooser&, const VideoLimits&) {
  no_video();
}
std::vector<Image> decode_video_frames(std::span<const uint8_t>, std::span<const int64_t>,
                                       const VideoLimits&) {
  no_video();
}

#else

namespace {

// Demuxers allowed to open a video. Playlist-like demuxers (hls, concat, dash, ...) that
// would open further URLs are never reachable: they are not listed and io_open refuses.
constexpr const char* kDemuxers = "mov,mp4,m4a,3gp,3g2,mj2,matroska,webm,avi,mpegts,ogg,flv";
constexpr int kIoBufferSize = 1 << 16;

std::string av_error(int code) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {0};
  av_strerror(code, buf, sizeof buf);
  return buf;
}

[[noreturn]] void fail(const std::string& what) { throw MediaError(what); }

void silence_libav() {
  static std::once_flag once;
  std::call_once(once, [] { av_log_set_level(AV_LOG_QUIET); });
}

// The bytes, read through an AVIOContext.
struct MemoryInput {
  const uint8_t* data = nullptr;
  int64_t size = 0;
  int64_t pos = 0;
};

int read_memory(void* opaque, uint8_t* buf, int n) {
  auto* in = static_cast<MemoryInput*>(opaque);
  int64_t left = in->size - in->pos;
  if (left <= 0) return AVERROR_EOF;
  int k = static_cast<int>(std::min<int64_t>(left, n));
  std::memcpy(buf, in->data + in->pos, static_cast<size_t>(k));
  in->pos += k;
  return k;
}

int64_t seek_memory(void* opaque, int64_t offset, int whence) {
  auto* in = static_cast<MemoryInput*>(opaque);
  whence &= ~AVSEEK_FORCE;
  if (whence == AVSEEK_SIZE) return in->size;
  int64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? in->pos : in->size;
  if (whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END) return AVERROR(EINVAL);
  if (offset > in->size || offset < -in->size) return AVERROR(EINVAL);
  int64_t to = base + offset;
  if (to < 0 || to > in->size) return AVERROR(EINVAL);
  in->pos = to;
  return to;
}

int refuse_io_open(AVFormatContext*, AVIOContext**, const char*, int, AVDictionary**) {
  return AVERROR(EPERM);
}

struct IoDeleter {
  void operator()(AVIOContext* io) const {
    if (io) av_freep(&io->buffer);
    avio_context_free(&io);
  }
};
struct FormatDeleter {
  void operator()(AVFormatContext* f) const { avformat_close_input(&f); }
};
struct CodecDeleter {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct FrameDeleter {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
struct PacketDeleter {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct SwsDeleter {
  void operator()(SwsContext* s) const { sws_freeContext(s); }
};

using PacketPtr = std::unique_ptr<AVPacket, PacketDeleter>;
using FramePtr = std::unique_ptr<AVFrame, FrameDeleter>;

PacketPtr new_packet() {
  PacketPtr p(av_packet_alloc());
  if (!p) fail("out of memory");
  return p;
}

double seconds(int64_t pts, AVRational tb) {
  // Multiply before dividing, as torchcodec's ptsToSeconds.
  return static_cast<double>(pts) * tb.num / tb.den;
}

double rational(AVRational r) { return r.num > 0 && r.den > 0 ? av_q2d(r) : 0.0; }

// An opened container with its best video stream chosen and the header limits checked.
// Member order matters: the format context is closed before its I/O context is freed.
class Container {
 public:
  Container(std::span<const uint8_t> bytes, const VideoLimits& limits) : limits_(limits) {
    silence_libav();
    if (bytes.empty()) fail("empty input");
    if (static_cast<int64_t>(bytes.size()) > limits.max_bytes)
      fail(str_cat("input of ", bytes.size(), " bytes exceeds the limit of ", limits.max_bytes,
                   " bytes"));
    input_ = {bytes.data(), static_cast<int64_t>(bytes.size()), 0};
    auto* buffer = static_cast<uint8_t*>(av_malloc(kIoBufferSize));
    if (!buffer) fail("out of memory");
    io_.reset(
        avio_alloc_context(buffer, kIoBufferSize, 0, &input_, read_memory, nullptr, seek_memory));
    if (!io_) {
      av_free(buffer);
      fail("out of memory");
    }
    AVFormatContext* f = avformat_alloc_context();
    if (!f) fail("out of memory");
    f->pb = io_.get();
    f->flags |= AVFMT_FLAG_CUSTOM_IO;
    f->io_open = refuse_io_open;
    AVDictionary* opts = nullptr;
    av_dict_set(&opts, "format_whitelist", kDemuxers, 0);
    int ret = avformat_open_input(&f, nullptr, nullptr, &opts);  // frees f on failure
    av_dict_free(&opts);
    if (ret < 0) fail("not a readable video container (" + av_error(ret) + ")");
    fmt_.reset(f);
    container_ = fmt_->iformat && fmt_->iformat->name ? fmt_->iformat->name : "";
    check_header_dims();
    find_stream_info();
    choose_stream();
  }

  // The I/O context points at input_: never copied or moved.
  Container(const Container&) = delete;
  Container& operator=(const Container&) = delete;

  AVFormatContext* fmt() const { return fmt_.get(); }
  AVStream* stream() const { return fmt_->streams[stream_index_]; }
  int stream_index() const { return stream_index_; }
  const AVCodec* codec() const { return codec_; }
  const std::string& container() const { return container_; }
  int quarter_turns() const { return quarter_turns_; }
  const VideoLimits& limits() const { return limits_; }

  // Reads the next packet of the chosen stream; false at the end of the input.
  bool next_packet(AVPacket* pkt) {
    for (;;) {
      int ret = av_read_frame(fmt_.get(), pkt);
      if (ret == AVERROR_EOF) return false;
      if (ret < 0) fail("corrupt or truncated container (" + av_error(ret) + ")");
      if (pkt->stream_index == stream_index_) return true;
      av_packet_unref(pkt);
    }
  }

  void check_frame_size(int64_t w, int64_t h, const char* where) const {
    if (w <= 0 || h <= 0) fail(str_cat(where, " has no frame size"));
    if (w > limits_.max_pixels / h)
      fail(str_cat(where, " of ", w, "x", h, " pixels exceeds the limit of ", limits_.max_pixels,
                   " pixels per frame"));
  }

 private:
  // Refuses huge frame sizes the container header claims before any frame is decoded.
  void check_header_dims() const {
    for (unsigned i = 0; i < fmt_->nb_streams; ++i) {
      const AVCodecParameters* par = fmt_->streams[i]->codecpar;
      if (par->codec_type == AVMEDIA_TYPE_VIDEO && par->width > 0 && par->height > 0)
        check_frame_size(par->width, par->height, "video stream");
    }
  }

  void find_stream_info() {
    // Per-stream decoder options for the frames libavformat decodes while probing: the
    // pixel limit makes libavcodec refuse a huge frame before allocating it.
    unsigned n = fmt_->nb_streams;
    if (n == 0) fail("no streams in the container");
    std::vector<AVDictionary*> opts(n, nullptr);
    for (auto& d : opts) {
      av_dict_set_int(&d, "max_pixels", std::min<int64_t>(limits_.max_pixels, INT_MAX), 0);
      av_dict_set(&d, "threads", "1", 0);
    }
    int ret = avformat_find_stream_info(fmt_.get(), opts.data());
    for (auto& d : opts) av_dict_free(&d);
    if (ret < 0) fail("corrupt or truncated container (" + av_error(ret) + ")");
  }

  void choose_stream() {
    const AVCodec* dec = nullptr;
    int si = av_find_best_stream(fmt_.get(), AVMEDIA_TYPE_VIDEO, -1, -1, &dec, 0);
    if (si == AVERROR_DECODER_NOT_FOUND) {
      int any = av_find_best_stream(fmt_.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
      const char* name =
          any >= 0 ? avcodec_get_name(fmt_->streams[any]->codecpar->codec_id) : "unknown";
      fail(str_cat("unsupported video codec '", name, "'"));
    }
    if (si < 0) {
      bool audio = av_find_best_stream(fmt_.get(), AVMEDIA_TYPE_AUDIO, -1, -1, nullptr, 0) >= 0;
      fail(audio ? "no video stream (the input holds audio only)" : "no video stream");
    }
    stream_index_ = si;
    codec_ = dec;
    const AVStream* st = stream();
    check_frame_size(st->codecpar->width, st->codecpar->height, "video stream");
    quarter_turns_ = display_quarter_turns(st);
    if (st->nb_frames > limits_.max_frames)
      fail(str_cat("video of ", st->nb_frames, " frames exceeds the limit of ", limits_.max_frames,
                   " frames"));
    double header_duration = 0;
    if (st->duration != AV_NOPTS_VALUE && st->duration > 0)
      header_duration = seconds(st->duration, st->time_base);
    else if (fmt_->duration != AV_NOPTS_VALUE && fmt_->duration > 0)
      header_duration = static_cast<double>(fmt_->duration) / AV_TIME_BASE;
    if (header_duration > limits_.max_duration_s)
      fail(str_cat("video of ", header_duration, " s exceeds the limit of ", limits_.max_duration_s,
                   " s"));
  }

  // Clockwise quarter turns the stream's display matrix asks for, rounded as the ffmpeg
  // CLI's autorotate and OpenCV's CAP_PROP_ORIENTATION_AUTO round it; other angles: 0.
  static int display_quarter_turns(const AVStream* st) {
    const uint8_t* matrix = nullptr;
#if LIBAVCODEC_VERSION_INT >= AV_VERSION_INT(60, 31, 100)
    const AVPacketSideData* sd = av_packet_side_data_get(
        st->codecpar->coded_side_data, st->codecpar->nb_coded_side_data, AV_PKT_DATA_DISPLAYMATRIX);
    if (sd && sd->size >= 9 * 4) matrix = sd->data;
#else
    size_t size = 0;
    const uint8_t* sd = av_stream_get_side_data(st, AV_PKT_DATA_DISPLAYMATRIX, &size);
    if (sd && size >= 9 * 4) matrix = sd;
#endif
    if (!matrix) return 0;
    double theta = -std::round(av_display_rotation_get(reinterpret_cast<const int32_t*>(matrix)));
    if (!std::isfinite(theta)) return 0;
    theta -= 360 * std::floor(theta / 360 + 0.9 / 360);
    for (int q = 1; q < 4; ++q)
      if (std::fabs(theta - 90 * q) < 1) return q;
    return 0;
  }

  VideoLimits limits_;
  MemoryInput input_;
  std::unique_ptr<AVIOContext, IoDeleter> io_;
  std::unique_ptr<AVFormatContext, FormatDeleter> fmt_;
  int stream_index_ = -1;
  int quarter_turns_ = 0;
  const AVCodec* codec_ = nullptr;
  std::string container_;
};

// Scans every packet of the chosen stream, as torchcodec's exact seek mode does.
VideoInfo scan(Container& c) {
  const AVStream* st = c.stream();
  const VideoLimits& lim = c.limits();
  VideoInfo info;
  info.width = st->codecpar->width;
  info.height = st->codecpar->height;
  if (c.quarter_turns() % 2) std::swap(info.width, info.height);
  info.codec = c.codec()->name;
  info.container = c.container();
  int64_t begin = INT64_MAX, end = INT64_MIN;
  bool timed = false;
  PacketPtr pkt = new_packet();
  while (c.next_packet(pkt.get())) {
    bool discard = pkt->flags & AV_PKT_FLAG_DISCARD;
    int64_t pts = pkt->pts != AV_NOPTS_VALUE ? pkt->pts : pkt->dts;
    int64_t dur = pkt->duration;
    av_packet_unref(pkt.get());
    if (discard) continue;
    if (++info.total_frames > lim.max_frames)
      fail(str_cat("video has more than the limit of ", lim.max_frames, " frames"));
    if (pts == AV_NOPTS_VALUE) continue;
    timed = true;
    begin = std::min(begin, pts);
    if (dur > 0 && pts > INT64_MAX - dur) fail("corrupt timestamps");
    end = std::max(end, pts + std::max<int64_t>(dur, 0));
  }
  if (info.total_frames == 0) fail("video stream has no frames");
  if (timed) {
    double b = seconds(begin, st->time_base), e = seconds(end, st->time_base);
    info.duration = e - b;
    if (info.duration > lim.max_duration_s)
      fail(str_cat("video of ", info.duration, " s exceeds the limit of ", lim.max_duration_s,
                   " s"));
    if (e != b) info.fps = static_cast<double>(info.total_frames) / info.duration;
  }
  info.stream_fps = rational(st->avg_frame_rate);
  if (info.stream_fps <= 0) info.stream_fps = rational(st->r_frame_rate);
  if (info.fps <= 0) info.fps = info.stream_fps;
  if (info.duration <= 0 && info.fps > 0) info.duration = info.total_frames / info.fps;
  return info;
}

void check_indices(std::span<const int64_t> indices, const VideoInfo& info,
                   const VideoLimits& lim) {
  for (size_t k = 0; k < indices.size(); ++k) {
    if (indices[k] < 0 || indices[k] >= info.total_frames)
      fail(str_cat("frame index ", indices[k], " is outside the video's ", info.total_frames,
                   " frames"));
    if (k > 0 && indices[k] < indices[k - 1])
      fail(str_cat("frame indices must be sorted (", indices[k - 1], " before ", indices[k], ")"));
  }
  int64_t frame_bytes = info.width * info.height * 3;
  if (!indices.empty() && static_cast<int64_t>(indices.size()) > lim.max_output_bytes / frame_bytes)
    fail(str_cat(indices.size(), " frames of ", info.width, "x", info.height,
                 " exceed the limit of ", lim.max_output_bytes, " decoded bytes"));
}

// YUV (or any libav pixel format) -> packed RGB24 at the frame's size.
class RgbConverter {
 public:
  Image convert(const AVFrame* f) {
    const int w = f->width, h = f->height;
    auto fmt = static_cast<AVPixelFormat>(f->format);
    sws_.reset(sws_getCachedContext(sws_.release(), w, h, fmt, w, h, AV_PIX_FMT_RGB24, SWS_BICUBIC,
                                    nullptr, nullptr, nullptr));
    if (!sws_) fail(str_cat("cannot convert pixel format '", pix_fmt_name(fmt), "' to RGB"));
    int *inv_table = nullptr, *table = nullptr;
    int src_range = 0, dst_range = 0, brightness = 0, contrast = 0, saturation = 0;
    if (sws_getColorspaceDetails(sws_.get(), &inv_table, &src_range, &table, &dst_range,
                                 &brightness, &contrast, &saturation) >= 0) {
      // The frame's matrix (BT.601 when unspecified); full range when the frame says so,
      // otherwise what the pixel format implies (yuvj* full, yuv* limited).
      const int* coeffs = sws_getCoefficients(f->colorspace);
      if (f->color_range == AVCOL_RANGE_JPEG) src_range = 1;
      sws_setColorspaceDetails(sws_.get(), coeffs, src_range, coeffs, dst_range, brightness,
                               contrast, saturation);
    }
    // swscale's SIMD writers may store past the row end: convert into padded rows.
    const int stride = (w * 3 + 64 + 63) / 64 * 64;
    scratch_.resize(static_cast<size_t>(stride) * (h + 1));
    uint8_t* dst[4] = {scratch_.data(), nullptr, nullptr, nullptr};
    int dst_stride[4] = {stride, 0, 0, 0};
    int rows = sws_scale(sws_.get(), f->data, f->linesize, 0, h, dst, dst_stride);
    if (rows != h) fail("pixel conversion failed");
    Image img;
    img.width = w;
    img.height = h;
    img.rgb.resize(static_cast<size_t>(w) * h * 3);
    for (int y = 0; y < h; ++y)
      std::memcpy(img.rgb.data() + static_cast<size_t>(y) * w * 3,
                  scratch_.data() + static_cast<size_t>(y) * stride, static_cast<size_t>(w) * 3);
    return img;
  }

 private:
  static const char* pix_fmt_name(AVPixelFormat f) {
    const char* n = av_get_pix_fmt_name(f);
    return n ? n : "unknown";
  }
  std::unique_ptr<SwsContext, SwsDeleter> sws_;
  std::vector<uint8_t> scratch_;
};

// img turned clockwise by q quarter turns, after the RGB conversion as OpenCV's cv::rotate.
Image rotate(Image img, int q) {
  if (q == 0) return img;
  const int64_t w = img.width, h = img.height;
  Image out;
  out.width = q == 2 ? w : h;
  out.height = q == 2 ? h : w;
  out.rgb.resize(img.rgb.size());
  for (int64_t y = 0; y < out.height; ++y)
    for (int64_t x = 0; x < out.width; ++x) {
      // Source pixel of output (x, y): clockwise 90: (y, h-1-x); 180: (w-1-x, h-1-y);
      // 270: (w-1-y, x).
      int64_t sx = q == 1 ? y : q == 2 ? w - 1 - x : w - 1 - y;
      int64_t sy = q == 1 ? h - 1 - x : q == 2 ? h - 1 - y : x;
      std::memcpy(&out.rgb[(y * out.width + x) * 3], &img.rgb[(sy * w + sx) * 3], 3);
    }
  return out;
}

// Decodes c's stream from its current position, keeping the frames at indices.
std::vector<Image> decode_frames(Container& c, const VideoInfo& info,
                                 std::span<const int64_t> indices) {
  std::vector<Image> out;
  if (indices.empty()) return out;
  out.reserve(indices.size());
  std::unique_ptr<AVCodecContext, CodecDeleter> dec(avcodec_alloc_context3(c.codec()));
  if (!dec) fail("out of memory");
  int ret = avcodec_parameters_to_context(dec.get(), c.stream()->codecpar);
  if (ret < 0) fail("bad codec parameters (" + av_error(ret) + ")");
  dec->thread_count = std::max(0, c.limits().decoder_threads);
  dec->max_pixels = std::min<int64_t>(c.limits().max_pixels, INT_MAX);
  dec->pkt_timebase = c.stream()->time_base;
  ret = avcodec_open2(dec.get(), c.codec(), nullptr);
  if (ret < 0) fail(str_cat("cannot open the ", info.codec, " decoder (", av_error(ret), ")"));

  PacketPtr pkt = new_packet();
  FramePtr frame(av_frame_alloc());
  if (!frame) fail("out of memory");
  RgbConverter rgb;
  const int coded_w = c.stream()->codecpar->width, coded_h = c.stream()->codecpar->height;
  int64_t n = 0;  // frames the decoder has returned so far
  size_t k = 0;   // next entry of indices
  bool flushed = false;
  while (k < indices.size()) {
    if (!flushed) {
      bool have = c.next_packet(pkt.get());
      ret = avcodec_send_packet(dec.get(), have ? pkt.get() : nullptr);
      av_packet_unref(pkt.get());
      flushed = !have;
      if (ret < 0 && ret != AVERROR(EAGAIN) && ret != AVERROR_EOF)
        fail(str_cat("corrupt ", info.codec, " data at frame ", n, " (", av_error(ret), ")"));
    }
    for (;;) {
      ret = avcodec_receive_frame(dec.get(), frame.get());
      if (ret == AVERROR(EAGAIN)) break;
      if (ret == AVERROR_EOF) {
        fail(
            str_cat("the stream ended after ", n, " frames; frame ", indices[k], " was requested"));
      }
      if (ret < 0)
        fail(str_cat("corrupt ", info.codec, " data at frame ", n, " (", av_error(ret), ")"));
      if (frame->width != coded_w || frame->height != coded_h)
        fail(str_cat("frame ", n, " is ", frame->width, "x", frame->height, " but the stream is ",
                     coded_w, "x", coded_h));
      while (k < indices.size() && indices[k] == n) {
        if (k > 0 && indices[k - 1] == n)
          out.push_back(out.back());
        else
          out.push_back(rotate(rgb.convert(frame.get()), c.quarter_turns()));
        ++k;
      }
      av_frame_unref(frame.get());
      ++n;
      if (k == indices.size()) break;
    }
    if (flushed && k < indices.size() && ret == AVERROR(EAGAIN))
      fail(str_cat("the stream ended after ", n, " frames; frame ", indices[k], " was requested"));
  }
  return out;
}

}  // namespace

bool video_decode_available() { return true; }

VideoInfo probe_video(std::span<const uint8_t> bytes, const VideoLimits& limits) {
  Container c(bytes, limits);
  return scan(c);
}

DecodedVideo decode_video(std::span<const uint8_t> bytes, const FrameChooser& choose,
                          const VideoLimits& limits) {
  DecodedVideo v;
  v.info = probe_video(bytes, limits);
  v.indices = choose(v.info);
  check_indices(v.indices, v.info, limits);
  // A second pass from the start: re-opening is cheaper and more robust than seeking.
  Container c(bytes, limits);
  v.frames = decode_frames(c, v.info, v.indices);
  return v;
}

std::vector<Image> decode_video_frames(std::span<const uint8_t> bytes,
                                       std::span<const int64_t> indices,
                                       const VideoLimits& limits) {
  std::vector<int64_t> chosen(indices.begin(), indices.end());
  return decode_video(
             bytes, [&](const VideoInfo&) { return chosen; }, limits)
      .frames;
}

#endif  // VTLLM_WITH_VIDEO

}  // namespace vtllm::multimodal
