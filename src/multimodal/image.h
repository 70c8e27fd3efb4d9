// Image decoding: PNG (libpng), JPEG (libjpeg-turbo), WebP (libwebp), GIF first frame (giflib)
// and BMP to 8-bit RGB, with the pixels PIL's `Image.open(f).convert("RGB")` gives (the
// libraries PIL links, and PIL's mode conversions), then by default the EXIF orientation as
// transformers' `load_image` applies it (PIL.ImageOps.exif_transpose; vLLM's loader does not).
//
// Thread-safety: decode_image is pure (no shared state); call it from any thread concurrently.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"

namespace vtllm::multimodal {

// A bad, truncated, oversized or unsupported media file. what() names the format and the
// problem ("corrupt PNG: ...", "image of 100000x100000 pixels exceeds the limit of ...").
class MediaError : public Error {
 public:
  using Error::Error;
};

// An 8-bit RGB image, rows top to bottom, HWC: rgb[(y * width + x) * 3 + c].
struct Image {
  int64_t width = 0, height = 0;
  std::vector<uint8_t> rgb;
};

// Refusals checked before anything large is allocated: the pixel count comes from the
// file's header, so a decompression bomb is refused without decoding it.
struct ImageLimits {
  int64_t max_pixels = int64_t{1} << 27;  // width * height (134M: 4x a 4096^2 processor input)
  int64_t max_bytes = int64_t{1} << 28;   // size of the encoded file
};

struct DecodeOptions {
  // Apply the EXIF Orientation tag of JPEG (APP1), PNG (eXIf) and WebP (EXIF chunk) files as
  // PIL.ImageOps.exif_transpose, which transformers 5.17's load_image calls before
  // convert("RGB"). Off: pixels as stored (PIL's plain open + convert, and vLLM).
  bool exif_transpose = true;
};

enum class ImageFormat { kUnknown, kPng, kJpeg, kWebp, kGif, kBmp };

// The format named by the file's magic bytes (never by a file name).
ImageFormat sniff_image_format(std::span<const uint8_t> bytes);
// "PNG", "JPEG", "WebP", "GIF", "BMP" or "unknown".
const char* image_format_name(ImageFormat f);

// Decodes `bytes` (any supported format, sniffed) to RGB as PIL's convert("RGB") does:
// RGBA/LA drop alpha (no compositing), L/LA replicate gray, palettes are looked up, 16-bit
// PNG samples keep their high byte (16-bit gray without alpha clips to 255 as PIL's I;16),
// CMYK/YCCK JPEG is converted with PIL's formula (Adobe-inverted samples), GIF decodes its
// first frame; then EXIF orientation per `options`. Throws MediaError on anything else.
Image decode_image(std::span<const uint8_t> bytes, const ImageLimits& limits = {},
                   const DecodeOptions& options = {});

}  // namespace vtllm::multimodal
