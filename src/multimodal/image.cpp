#include "multimodal/image.h"

#include <gif_lib.h>
#include <jpeglib.h>
#include <png.h>
#include <webp/decode.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>

namespace vtllm::multimodal {
namespace {

// Widest side accepted whatever the pixel limit (keeps every size product far from overflow).
constexpr int64_t kMaxSide = int64_t{1} << 24;

[[noreturn]] void fail(const char* format, const std::string& problem) {
  throw MediaError(str_cat("corrupt ", format, ": ", problem));
}

void check_size(const char* format, int64_t width, int64_t height, const ImageLimits& limits) {
  if (width <= 0 || height <= 0) fail(format, str_cat("invalid size ", width, "x", height));
  if (width > kMaxSide || height > kMaxSide || width * height > limits.max_pixels)
    throw MediaError(str_cat(format, " image of ", width, "x", height,
                             " pixels exceeds the limit of ", limits.max_pixels, " pixels"));
}

Image make_image(int64_t width, int64_t height) {
  Image img;
  img.width = width;
  img.height = height;
  img.rgb.resize(size_t(width * height * 3));
  return img;
}

// ---- EXIF orientation (PIL.ImageOps.exif_transpose, which transformers' load_image applies)

// The Orientation tag (0x0112) of IFD0 in a TIFF-structured EXIF block ("Exif\0\0" prefix
// allowed); 1 when absent or unreadable.
int exif_orientation(const uint8_t* p, size_t n) {
  if (n >= 6 && std::memcmp(p, "Exif\0\0", 6) == 0) p += 6, n -= 6;
  if (n < 8) return 1;
  const bool le = p[0] == 'I' && p[1] == 'I';
  if (!le && !(p[0] == 'M' && p[1] == 'M')) return 1;
  auto u16 = [&](size_t at) {
    return le ? uint32_t(p[at] | p[at + 1] << 8) : uint32_t(p[at] << 8 | p[at + 1]);
  };
  auto u32 = [&](size_t at) {
    return le ? u16(at) | u16(at + 2) << 16 : u16(at) << 16 | u16(at + 2);
  };
  if (u16(2) != 42) return 1;
  const size_t ifd = u32(4);
  if (ifd > n || n - ifd < 2) return 1;
  const size_t count = u16(ifd);
  for (size_t i = 0; i < count; ++i) {
    const size_t e = ifd + 2 + 12 * i;
    if (e + 12 > n) return 1;
    if (u16(e) != 0x0112) continue;
    const uint32_t type = u16(e + 2);
    if (type == 3) return int(u16(e + 8));  // SHORT
    if (type == 4) return int(u32(e + 8));  // LONG
    return 1;
  }
  return 1;
}

// `img` transposed as PIL's exif_transpose does for `orientation` (2..8; others: unchanged).
Image orient(Image img, int orientation) {
  if (orientation < 2 || orientation > 8) return img;
  const int64_t w = img.width, h = img.height;
  const bool swap = orientation >= 5;
  Image out = make_image(swap ? h : w, swap ? w : h);
  for (int64_t y = 0; y < out.height; ++y)
    for (int64_t x = 0; x < out.width; ++x) {
      int64_t sx = x, sy = y;
      switch (orientation) {
        case 2:
          sx = w - 1 - x;
          break;  // FLIP_LEFT_RIGHT
        case 3:
          sx = w - 1 - x, sy = h - 1 - y;
          break;  // ROTATE_180
        case 4:
          sy = h - 1 - y;
          break;  // FLIP_TOP_BOTTOM
        case 5:
          sx = y, sy = x;
          break;  // TRANSPOSE
        case 6:
          sx = y, sy = h - 1 - x;
          break;  // ROTATE_270 (90 degrees clockwise)
        case 7:
          sx = w - 1 - y, sy = h - 1 - x;
          break;  // TRANSVERSE
        case 8:
          sx = w - 1 - y, sy = x;
          break;  // ROTATE_90 (counter-clockwise)
      }
      std::memcpy(&out.rgb[size_t((y * out.width + x) * 3)], &img.rgb[size_t((sy * w + sx) * 3)],
                  3);
    }
  return out;
}

// The orientation in a WebP file's EXIF chunk, or 1.
int webp_orientation(std::span<const uint8_t> b) {
  size_t at = 12;
  while (at + 8 <= b.size()) {
    const size_t len = size_t(b[at + 4]) | size_t(b[at + 5]) << 8 | size_t(b[at + 6]) << 16 |
                       size_t(b[at + 7]) << 24;
    if (len > b.size() - at - 8) return 1;
    if (std::memcmp(&b[at], "EXIF", 4) == 0) return exif_orientation(&b[at + 8], len);
    at += 8 + len + (len & 1);
  }
  return 1;
}

// ---- PNG --------------------------------------------------------------------------------
// libpng reports errors by longjmp. The setjmp frame below (png_decode_frame) owns no object
// with a destructor, so the jump skips nothing; the pixels live in the caller's Image.

// Row layout after the transforms png_decode_frame sets.
enum class PngLayout { kGray8, kGrayAlpha8, kRgb8, kRgba8, kGray16 };

struct PngContext {
  const uint8_t* data;
  size_t size, pos;
  const ImageLimits* limits;
  char error[256];
  bool over_limit;
  int64_t width, height;
  int orientation;
  PngLayout layout;
  std::vector<uint8_t>* rows;  // caller-owned: the decoded rows in `layout`
};

void png_read_fn(png_structp png, png_bytep dst, size_t len) {
  auto* ctx = static_cast<PngContext*>(png_get_io_ptr(png));
  if (len > ctx->size - ctx->pos) png_error(png, "truncated file");
  std::memcpy(dst, ctx->data + ctx->pos, len);
  ctx->pos += len;
}

void png_error_fn(png_structp png, png_const_charp msg) {
  auto* ctx = static_cast<PngContext*>(png_get_error_ptr(png));
  std::snprintf(ctx->error, sizeof ctx->error, "%s", msg);
  png_longjmp(png, 1);
}

void png_warning_fn(png_structp, png_const_charp) {}

// Returns false with ctx->error set on a libpng error, or with ctx->over_limit on a header
// over the limits (nothing allocated then).
bool png_decode_frame(PngContext* ctx, png_structp png, png_infop info) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_read_fn(png, ctx, png_read_fn);
  png_set_user_limits(png, uint32_t(kMaxSide), uint32_t(kMaxSide));
  png_read_info(png, info);
  png_uint_32 w = 0, h = 0;
  int bit_depth = 0, color_type = 0, interlace = 0;
  png_get_IHDR(png, info, &w, &h, &bit_depth, &color_type, &interlace, nullptr, nullptr);
  png_bytep exif = nullptr;
  png_uint_32 exif_len = 0;
  if (png_get_eXIf_1(png, info, &exif_len, &exif) != 0 && exif != nullptr)
    ctx->orientation = exif_orientation(exif, exif_len);
  ctx->width = w;
  ctx->height = h;
  if (int64_t(w) * int64_t(h) > ctx->limits->max_pixels) {
    ctx->over_limit = true;
    return false;
  }
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);  // tRNS becomes alpha
  if (color_type == PNG_COLOR_TYPE_GRAY && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  // PIL reads 16-bit samples by their high byte (rawmodes "RGB;16B", "LA;16B", ...), except
  // plain 16-bit gray, which it keeps as I;16 and clips when converting.
  const bool gray16 = color_type == PNG_COLOR_TYPE_GRAY && bit_depth == 16;
  if (bit_depth == 16 && !gray16) png_set_strip_16(png);
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const int channels = png_get_channels(png, info);
  if (gray16) {
    ctx->layout = PngLayout::kGray16;
  } else if (png_get_bit_depth(png, info) != 8 || channels < 1 || channels > 4) {
    std::snprintf(ctx->error, sizeof ctx->error, "unexpected decoded layout (%d channels, %d bits)",
                  channels, int(png_get_bit_depth(png, info)));
    return false;
  } else {
    static constexpr PngLayout kByChannels[] = {PngLayout::kGray8, PngLayout::kGrayAlpha8,
                                                PngLayout::kRgb8, PngLayout::kRgba8};
    ctx->layout = kByChannels[channels - 1];
  }
  const size_t row_bytes = png_get_rowbytes(png, info);
  if (row_bytes != size_t(w) * size_t(channels) * (gray16 ? 2 : 1)) {
    std::snprintf(ctx->error, sizeof ctx->error, "unexpected row size %zu", row_bytes);
    return false;
  }
  ctx->rows->assign(row_bytes * h, 0);
  uint8_t* buf = ctx->rows->data();
  // Every pass of an interlaced image goes over all rows (libpng fills in its pixels).
  for (int p = 0; p < passes; ++p)
    for (png_uint_32 y = 0; y < h; ++y) png_read_row(png, buf + size_t(y) * row_bytes, nullptr);
  png_read_end(png, nullptr);
  return true;
}

Image decode_png(std::span<const uint8_t> bytes, const ImageLimits& limits, int* orientation) {
  // The size sits at a fixed place (IHDR must be the first chunk): refuse a bomb before
  // libpng reads anything else.
  if (bytes.size() >= 24 && std::memcmp(&bytes[12], "IHDR", 4) == 0) {
    auto be32 = [&](size_t at) {
      return int64_t(bytes[at]) << 24 | int64_t(bytes[at + 1]) << 16 | int64_t(bytes[at + 2]) << 8 |
             bytes[at + 3];
    };
    const int64_t w = be32(16), h = be32(20);
    if (w > 0 && h > 0) check_size("PNG", w, h, limits);
  }
  PngContext ctx{};
  ctx.data = bytes.data();
  ctx.size = bytes.size();
  ctx.limits = &limits;
  std::vector<uint8_t> rows;
  ctx.rows = &rows;
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, &ctx, png_error_fn, png_warning_fn);
  if (png == nullptr) throw MediaError("PNG: out of memory");
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    throw MediaError("PNG: out of memory");
  }
  bool ok;
  try {
    ok = png_decode_frame(&ctx, png, info);
  } catch (...) {
    png_destroy_read_struct(&png, &info, nullptr);
    throw;
  }
  png_destroy_read_struct(&png, &info, nullptr);
  if (ctx.over_limit) check_size("PNG", ctx.width, ctx.height, limits);
  if (!ok) {
    std::string msg = ctx.error;
    if (msg.find("truncated") != std::string::npos || msg.find("Read Error") != std::string::npos)
      throw MediaError("truncated PNG: " + msg);
    fail("PNG", msg);
  }
  check_size("PNG", ctx.width, ctx.height, limits);
  *orientation = ctx.orientation == 0 ? 1 : ctx.orientation;
  const size_t n = size_t(ctx.width * ctx.height);
  if (ctx.layout == PngLayout::kRgb8) {  // the decoded rows are the image
    Image img;
    img.width = ctx.width;
    img.height = ctx.height;
    img.rgb = std::move(rows);
    return img;
  }
  Image img = make_image(ctx.width, ctx.height);
  const uint8_t* s = rows.data();
  uint8_t* d = img.rgb.data();
  switch (ctx.layout) {
    case PngLayout::kGray8:
      for (size_t i = 0; i < n; ++i) d[3 * i] = d[3 * i + 1] = d[3 * i + 2] = s[i];
      break;
    case PngLayout::kGrayAlpha8:
      for (size_t i = 0; i < n; ++i) d[3 * i] = d[3 * i + 1] = d[3 * i + 2] = s[2 * i];
      break;
    case PngLayout::kRgb8:
      break;  // returned above
    case PngLayout::kRgba8:
      for (size_t i = 0; i < n; ++i)
        for (int c = 0; c < 3; ++c) d[3 * i + c] = s[4 * i + c];
      break;
    case PngLayout::kGray16:
      for (size_t i = 0; i < n; ++i) {
        uint8_t v = s[2 * i] != 0 ? 255 : s[2 * i + 1];  // big-endian sample, clipped to 255
        d[3 * i] = d[3 * i + 1] = d[3 * i + 2] = v;
      }
      break;
  }
  return img;
}

// ---- JPEG -------------------------------------------------------------------------------

struct JpegError {
  jpeg_error_mgr mgr;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_error_exit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

void jpeg_quiet(j_common_ptr, int) {}
void jpeg_src_noop(j_decompress_ptr) {}
boolean jpeg_src_fill(j_decompress_ptr cinfo) {
  // The whole file was handed over at once: needing more means the file is truncated.
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  std::snprintf(err->message, sizeof err->message, "truncated file");
  std::longjmp(err->jump, 1);
}
void jpeg_src_skip(j_decompress_ptr cinfo, long n) {
  jpeg_source_mgr* src = cinfo->src;
  if (n <= 0) return;
  if (size_t(n) > src->bytes_in_buffer) jpeg_src_fill(cinfo);
  src->next_input_byte += n;
  src->bytes_in_buffer -= size_t(n);
}

struct JpegFrame {
  int64_t width = 0, height = 0;
  int components = 0;
  bool cmyk = false;
  bool over_limit = false;
  int orientation = 1;
  std::vector<uint8_t>* pixels = nullptr;  // caller-owned
};

// The setjmp frame for libjpeg: owns nothing with a destructor.
bool jpeg_decode_frame(jpeg_decompress_struct* cinfo, JpegError* err, jpeg_source_mgr* src,
                       const ImageLimits* limits, JpegFrame* frame) {
  if (setjmp(err->jump)) return false;
  jpeg_create_decompress(cinfo);
  cinfo->src = src;
  jpeg_save_markers(cinfo, JPEG_APP0 + 1, 0xffff);
  jpeg_read_header(cinfo, TRUE);
  for (jpeg_saved_marker_ptr m = cinfo->marker_list; m != nullptr; m = m->next)
    if (m->marker == JPEG_APP0 + 1 && m->data_length >= 6 &&
        std::memcmp(m->data, "Exif\0\0", 6) == 0) {
      frame->orientation = exif_orientation(m->data, m->data_length);
      break;
    }
  frame->width = cinfo->image_width;
  frame->height = cinfo->image_height;
  if (frame->width * frame->height > limits->max_pixels || frame->width > kMaxSide ||
      frame->height > kMaxSide || frame->width == 0 || frame->height == 0) {
    frame->over_limit = true;
    return false;
  }
  switch (cinfo->jpeg_color_space) {
    case JCS_GRAYSCALE:
      cinfo->out_color_space = JCS_GRAYSCALE;
      break;
    case JCS_CMYK:
    case JCS_YCCK:
      cinfo->out_color_space = JCS_CMYK;
      frame->cmyk = true;
      break;
    default:
      cinfo->out_color_space = JCS_RGB;
      break;
  }
  jpeg_start_decompress(cinfo);
  frame->components = cinfo->output_components;
  const size_t stride = size_t(cinfo->output_width) * size_t(cinfo->output_components);
  frame->pixels->resize(stride * cinfo->output_height);
  while (cinfo->output_scanline < cinfo->output_height) {
    JSAMPROW row = frame->pixels->data() + stride * cinfo->output_scanline;
    jpeg_read_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_decompress(cinfo);
  return true;
}

Image decode_jpeg(std::span<const uint8_t> bytes, const ImageLimits& limits, int* orientation) {
  jpeg_decompress_struct cinfo{};
  JpegError err{};
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_error_exit;
  err.mgr.emit_message = jpeg_quiet;  // corrupt-data warnings do not stop PIL either
  jpeg_source_mgr src{};
  src.next_input_byte = bytes.data();
  src.bytes_in_buffer = bytes.size();
  src.init_source = jpeg_src_noop;
  src.fill_input_buffer = jpeg_src_fill;
  src.skip_input_data = jpeg_src_skip;
  src.resync_to_restart = jpeg_resync_to_restart;
  src.term_source = jpeg_src_noop;
  std::vector<uint8_t> pixels;
  JpegFrame frame;
  frame.pixels = &pixels;
  bool ok;
  try {
    ok = jpeg_decode_frame(&cinfo, &err, &src, &limits, &frame);
  } catch (...) {
    jpeg_destroy_decompress(&cinfo);
    throw;
  }
  jpeg_destroy_decompress(&cinfo);
  if (frame.over_limit) {
    check_size("JPEG", frame.width, frame.height, limits);
    fail("JPEG", "invalid size");
  }
  if (!ok) {
    if (std::strcmp(err.message, "truncated file") == 0) throw MediaError("truncated JPEG file");
    fail("JPEG", err.message);
  }
  *orientation = frame.orientation;
  if (frame.components == 3 && !frame.cmyk) {  // decoded as RGB already: keep the buffer
    Image img;
    img.width = frame.width;
    img.height = frame.height;
    img.rgb = std::move(pixels);
    return img;
  }
  Image img = make_image(frame.width, frame.height);
  const size_t n = size_t(img.width * img.height);
  uint8_t* d = img.rgb.data();
  const uint8_t* s = pixels.data();
  if (frame.components == 1) {
    for (size_t i = 0; i < n; ++i) d[3 * i] = d[3 * i + 1] = d[3 * i + 2] = s[i];
  } else if (frame.cmyk && frame.components == 4) {
    // PIL reads CMYK JPEGs as Adobe-inverted ("CMYK;I") and converts with cmyk2rgb:
    // out = clip(nk - nk * c / 255) with nk = 255 - k, its MULDIV255 rounding.
    for (size_t i = 0; i < n; ++i) {
      int nk = s[4 * i + 3];  // inverted k: 255 - k
      for (int c = 0; c < 3; ++c) {
        int cc = 255 - s[4 * i + c];
        int t = cc * nk + 128;
        int v = nk - (((t >> 8) + t) >> 8);
        d[3 * i + c] = uint8_t(v < 0 ? 0 : v > 255 ? 255 : v);
      }
    }
  } else {
    fail("JPEG", str_cat("decoded to ", frame.components, " components"));
  }
  return img;
}

// ---- WebP -------------------------------------------------------------------------------

Image decode_webp(std::span<const uint8_t> bytes, const ImageLimits& limits, int* orientation) {
  WebPBitstreamFeatures features;
  VP8StatusCode st = WebPGetFeatures(bytes.data(), bytes.size(), &features);
  if (st == VP8_STATUS_NOT_ENOUGH_DATA) throw MediaError("truncated WebP file");
  if (st != VP8_STATUS_OK) fail("WebP", str_cat("cannot read the header (status ", int(st), ")"));
  if (features.has_animation)
    throw MediaError("unsupported WebP: animated WebP images are not supported");
  check_size("WebP", features.width, features.height, limits);
  Image img = make_image(features.width, features.height);
  const int stride = int(img.width * 3);
  if (WebPDecodeRGBInto(bytes.data(), bytes.size(), img.rgb.data(), img.rgb.size(), stride) ==
      nullptr)
    fail("WebP", "bitstream error or truncated data");
  *orientation = webp_orientation(bytes);
  return img;
}

// ---- GIF (first frame) ------------------------------------------------------------------

struct GifSource {
  const uint8_t* data;
  size_t size, pos;
};

int gif_read(GifFileType* gif, GifByteType* dst, int len) {
  auto* src = static_cast<GifSource*>(gif->UserData);
  size_t n = std::min(size_t(len < 0 ? 0 : len), src->size - src->pos);
  std::memcpy(dst, src->data + src->pos, n);
  src->pos += n;
  return int(n);
}

struct GifCloser {
  GifFileType* gif;
  ~GifCloser() {
    int e = 0;
    if (gif != nullptr) DGifCloseFile(gif, &e);
  }
};

[[noreturn]] void gif_fail(int code) {
  const char* msg = GifErrorString(code);
  std::string m = msg != nullptr ? msg : "unknown error";
  if (code == D_GIF_ERR_READ_FAILED || code == D_GIF_ERR_EOF_TOO_SOON)
    throw MediaError("truncated GIF: " + m);
  fail("GIF", m);
}

Image decode_gif(std::span<const uint8_t> bytes, const ImageLimits& limits) {
  GifSource src{bytes.data(), bytes.size(), 0};
  int err = 0;
  GifCloser closer{DGifOpen(&src, gif_read, &err)};
  GifFileType* gif = closer.gif;
  if (gif == nullptr) gif_fail(err);
  // PIL's image size is the logical screen; the first frame is placed at its offset.
  check_size("GIF", gif->SWidth, gif->SHeight, limits);
  int transparent = -1;
  for (;;) {
    GifRecordType type;
    if (DGifGetRecordType(gif, &type) == GIF_ERROR) gif_fail(gif->Error);
    if (type == TERMINATE_RECORD_TYPE) fail("GIF", "no image in the file");
    if (type == EXTENSION_RECORD_TYPE) {
      int code = 0;
      GifByteType* ext = nullptr;
      if (DGifGetExtension(gif, &code, &ext) == GIF_ERROR) gif_fail(gif->Error);
      if (code == GRAPHICS_EXT_FUNC_CODE && ext != nullptr && ext[0] >= 4 && (ext[1] & 1))
        transparent = ext[4];
      while (ext != nullptr)
        if (DGifGetExtensionNext(gif, &ext) == GIF_ERROR) gif_fail(gif->Error);
      continue;
    }
    if (type != IMAGE_DESC_RECORD_TYPE) continue;
    if (DGifGetImageDesc(gif) == GIF_ERROR) gif_fail(gif->Error);
    const GifImageDesc& desc = gif->Image;
    const int64_t fw = desc.Width, fh = desc.Height;
    if (fw <= 0 || fh <= 0 || fw > kMaxSide || fh > kMaxSide) fail("GIF", "invalid frame size");
    const ColorMapObject* cmap = desc.ColorMap != nullptr ? desc.ColorMap : gif->SColorMap;
    // Frame 0 starts from the transparent index where there is one (PIL's load_prepare).
    std::vector<uint8_t> index(size_t(gif->SWidth) * size_t(gif->SHeight),
                               uint8_t(transparent >= 0 ? transparent : 0));
    std::vector<GifPixelType> line(static_cast<size_t>(fw));
    auto put_row = [&](int64_t y) {
      int64_t yy = desc.Top + y;
      if (yy < 0 || yy >= gif->SHeight) return;
      for (int64_t x = 0; x < fw; ++x) {
        int64_t xx = desc.Left + x;
        if (xx >= 0 && xx < gif->SWidth) index[size_t(yy * gif->SWidth + xx)] = line[size_t(x)];
      }
    };
    if (desc.Interlace) {
      static constexpr int kStart[] = {0, 4, 2, 1}, kStep[] = {8, 8, 4, 2};
      for (int p = 0; p < 4; ++p)
        for (int64_t y = kStart[p]; y < fh; y += kStep[p]) {
          if (DGifGetLine(gif, line.data(), int(fw)) == GIF_ERROR) gif_fail(gif->Error);
          put_row(y);
        }
    } else {
      for (int64_t y = 0; y < fh; ++y) {
        if (DGifGetLine(gif, line.data(), int(fw)) == GIF_ERROR) gif_fail(gif->Error);
        put_row(y);
      }
    }
    Image img = make_image(gif->SWidth, gif->SHeight);
    for (size_t i = 0; i < index.size(); ++i) {
      int k = index[i];
      uint8_t r = 0, g = 0, b = 0;
      if (cmap == nullptr) {
        r = g = b = uint8_t(k);  // no palette: PIL's mode L
      } else if (k < cmap->ColorCount) {
        r = cmap->Colors[k].Red, g = cmap->Colors[k].Green, b = cmap->Colors[k].Blue;
      }
      img.rgb[3 * i] = r, img.rgb[3 * i + 1] = g, img.rgb[3 * i + 2] = b;
    }
    return img;
  }
}

// ---- BMP --------------------------------------------------------------------------------

uint32_t le32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
uint16_t le16(const uint8_t* p) { return uint16_t(p[0] | p[1] << 8); }

Image decode_bmp(std::span<const uint8_t> b, const ImageLimits& limits) {
  const size_t size = b.size();
  if (size < 26) throw MediaError("truncated BMP: no header");
  const uint32_t offbits = le32(&b[10]);
  const uint32_t hsize = le32(&b[14]);
  if (hsize != 12 && hsize != 40 && hsize != 52 && hsize != 56 && hsize != 108 && hsize != 124)
    throw MediaError(str_cat("unsupported BMP: header of ", hsize, " bytes"));
  if (size < 14 + size_t(hsize)) throw MediaError("truncated BMP: header");
  int64_t width, height;
  int bpp;
  uint32_t compression = 0, colors_used = 0;
  if (hsize == 12) {
    width = le16(&b[18]);
    height = int16_t(le16(&b[20]));
    bpp = le16(&b[24]);
  } else {
    width = int32_t(le32(&b[18]));
    height = int32_t(le32(&b[22]));
    bpp = le16(&b[28]);
    compression = le32(&b[30]);
    colors_used = le32(&b[46]);
  }
  const bool top_down = height < 0;
  if (top_down) height = -height;
  if (width <= 0 || height <= 0) fail("BMP", str_cat("invalid size ", width, "x", height));
  check_size("BMP", width, height, limits);
  uint32_t masks[3] = {0x00ff0000u, 0x0000ff00u, 0x000000ffu};
  size_t after_header = 14 + size_t(hsize);
  if (compression == 3 || compression == 6) {  // BI_BITFIELDS / BI_ALPHABITFIELDS
    if (bpp != 32) throw MediaError(str_cat("unsupported BMP: ", bpp, "-bit bitfields"));
    const size_t at = 54;  // after a 40-byte header, or inside a V2+ header
    if (size < at + 12) throw MediaError("truncated BMP: bitfield masks");
    for (int i = 0; i < 3; ++i) masks[i] = le32(&b[at + 4 * size_t(i)]);
    if (hsize == 40) after_header += compression == 6 ? 16 : 12;
    for (uint32_t m : masks) {
      if (m == 0 || (m >> __builtin_ctz(m)) != 0xffu)
        throw MediaError("unsupported BMP: bitfield masks other than 8-bit channels");
    }
  } else if (compression != 0) {
    throw MediaError(str_cat("unsupported BMP: compression ", compression, " (RLE/JPEG/PNG)"));
  }
  if (bpp != 1 && bpp != 4 && bpp != 8 && bpp != 24 && bpp != 32)
    throw MediaError(str_cat("unsupported BMP: ", bpp, " bits per pixel"));
  uint8_t palette[256][3] = {};
  if (bpp <= 8) {
    const size_t entry = hsize == 12 ? 3 : 4;
    size_t count = colors_used != 0 ? colors_used : size_t(1) << bpp;
    if (count > 256) fail("BMP", str_cat(count, " palette entries"));
    if (size < after_header + count * entry) throw MediaError("truncated BMP: palette");
    for (size_t i = 0; i < count; ++i)
      for (int c = 0; c < 3; ++c) palette[i][c] = b[after_header + i * entry + 2 - size_t(c)];
  }
  const size_t stride = ((size_t(width) * size_t(bpp) + 31) / 32) * 4;
  if (offbits > size || size - offbits < stride * size_t(height))
    throw MediaError("truncated BMP: pixel data");
  Image img = make_image(width, height);
  for (int64_t y = 0; y < height; ++y) {
    const uint8_t* row = &b[offbits + stride * size_t(top_down ? y : height - 1 - y)];
    uint8_t* d = &img.rgb[size_t(y * width * 3)];
    for (int64_t x = 0; x < width; ++x, d += 3) {
      if (bpp == 24) {
        d[0] = row[3 * x + 2], d[1] = row[3 * x + 1], d[2] = row[3 * x];
      } else if (bpp == 32) {
        uint32_t px = le32(&row[4 * x]);
        for (int c = 0; c < 3; ++c) d[c] = uint8_t((px & masks[c]) >> __builtin_ctz(masks[c]));
      } else {
        const int per_byte = 8 / bpp;
        const int shift = (per_byte - 1 - int(x % per_byte)) * bpp;
        const int k = (row[x / per_byte] >> shift) & ((1 << bpp) - 1);
        d[0] = palette[k][0], d[1] = palette[k][1], d[2] = palette[k][2];
      }
    }
  }
  return img;
}

}  // namespace

ImageFormat sniff_image_format(std::span<const uint8_t> b) {
  auto starts = [&](std::initializer_list<uint8_t> m, size_t at = 0) {
    if (b.size() < at + m.size()) return false;
    size_t i = at;
    for (uint8_t c : m)
      if (b[i++] != c) return false;
    return true;
  };
  if (starts({0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'})) return ImageFormat::kPng;
  if (starts({0xff, 0xd8, 0xff})) return ImageFormat::kJpeg;
  if (starts({'R', 'I', 'F', 'F'}) && starts({'W', 'E', 'B', 'P'}, 8)) return ImageFormat::kWebp;
  if (starts({'G', 'I', 'F', '8', '7', 'a'}) || starts({'G', 'I', 'F', '8', '9', 'a'}))
    return ImageFormat::kGif;
  if (starts({'B', 'M'})) return ImageFormat::kBmp;
  return ImageFormat::kUnknown;
}

const char* image_format_name(ImageFormat f) {
  switch (f) {
    case ImageFormat::kPng:
      return "PNG";
    case ImageFormat::kJpeg:
      return "JPEG";
    case ImageFormat::kWebp:
      return "WebP";
    case ImageFormat::kGif:
      return "GIF";
    case ImageFormat::kBmp:
      return "BMP";
    case ImageFormat::kUnknown:
      break;
  }
  return "unknown";
}

Image decode_image(std::span<const uint8_t> bytes, const ImageLimits& limits,
                   const DecodeOptions& options) {
  if (int64_t(bytes.size()) > limits.max_bytes)
    throw MediaError(str_cat("image file of ", bytes.size(), " bytes exceeds the limit of ",
                             limits.max_bytes, " bytes"));
  if (bytes.empty()) throw MediaError("empty image file");
  int orientation = 1;
  Image img;
  switch (sniff_image_format(bytes)) {
    case ImageFormat::kPng:
      img = decode_png(bytes, limits, &orientation);
      break;
    case ImageFormat::kJpeg:
      img = decode_jpeg(bytes, limits, &orientation);
      break;
    case ImageFormat::kWebp:
      img = decode_webp(bytes, limits, &orientation);
      break;
    case ImageFormat::kGif:
      return decode_gif(bytes, limits);
    case ImageFormat::kBmp:
      return decode_bmp(bytes, limits);
    case ImageFormat::kUnknown:
      throw MediaError("unsupported image format (not PNG, JPEG, WebP, GIF or BMP)");
  }
  return options.exif_transpose ? orient(std::move(img), orientation) : img;
}

}  // namespace vtllm::multimodal
