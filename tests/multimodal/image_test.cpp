// decode_image on files built here (lossless round trips through libpng's writer, BMPs and
// GIF/WebP/JPEG headers written byte by byte) and on broken, truncated and oversized files.
// The oracle's own files (every format and mode, against PIL) are in fixture_test.cpp.
#include "multimodal/image.h"

#include <gtest/gtest.h>
#include <jpeglib.h>
#include <png.h>

#include <cstdio>
#include <string>
#include <vector>

#include "test_util.h"

namespace vtllm::multimodal {
namespace {

using Bytes = std::vector<uint8_t>;

// A deterministic pattern with every byte value spread over the image.
std::vector<uint8_t> pattern(int64_t w, int64_t h, int channels, uint64_t seed) {
  std::vector<uint8_t> v(size_t(w * h * channels));
  for (size_t i = 0; i < v.size(); ++i) v[i] = uint8_t(splitmix64(seed + i) >> 56);
  return v;
}

Bytes png_encode(const std::vector<uint8_t>& pixels, int w, int h, png_uint_32 format,
                 const std::vector<uint8_t>* colormap = nullptr, int colormap_entries = 0) {
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  img.width = png_uint_32(w);
  img.height = png_uint_32(h);
  img.format = format;
  img.colormap_entries = png_uint_32(colormap_entries);
  png_alloc_size_t size = 0;
  const void* cmap = colormap != nullptr ? colormap->data() : nullptr;
  EXPECT_TRUE(png_image_write_get_memory_size(img, size, 0, pixels.data(), 0, cmap));
  Bytes out(size);
  EXPECT_TRUE(png_image_write_to_memory(&img, out.data(), &size, 0, pixels.data(), 0, cmap));
  out.resize(size);
  return out;
}

void expect_rgb(const Image& img, int64_t w, int64_t h, const std::vector<uint8_t>& rgb) {
  ASSERT_EQ(img.width, w);
  ASSERT_EQ(img.height, h);
  ASSERT_EQ(img.rgb.size(), rgb.size());
  for (size_t i = 0; i < rgb.size(); ++i)
    ASSERT_EQ(int(img.rgb[i]), int(rgb[i])) << "pixel " << i / 3 << " channel " << i % 3;
}

// RGB from `channels`-channel pixels as PIL's convert("RGB"): gray replicated, alpha dropped.
std::vector<uint8_t> to_rgb(const std::vector<uint8_t>& px, int channels) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < px.size(); i += size_t(channels)) {
    for (int c = 0; c < 3; ++c) out.push_back(channels >= 3 ? px[i + size_t(c)] : px[i]);
  }
  return out;
}

std::string decode_error(const Bytes& b, const ImageLimits& limits = {}) {
  try {
    decode_image(b, limits);
  } catch (const MediaError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ImageDecode, SniffsFormatFromMagicBytes) {
  EXPECT_EQ(sniff_image_format(Bytes{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0}),
            ImageFormat::kPng);
  EXPECT_EQ(sniff_image_format(Bytes{0xff, 0xd8, 0xff, 0xe0}), ImageFormat::kJpeg);
  EXPECT_EQ(sniff_image_format(Bytes{'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'E', 'B', 'P'}),
            ImageFormat::kWebp);
  EXPECT_EQ(sniff_image_format(Bytes{'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'A', 'V', 'E'}),
            ImageFormat::kUnknown);
  EXPECT_EQ(sniff_image_format(Bytes{'G', 'I', 'F', '8', '9', 'a'}), ImageFormat::kGif);
  EXPECT_EQ(sniff_image_format(Bytes{'B', 'M', 1}), ImageFormat::kBmp);
  EXPECT_EQ(sniff_image_format(Bytes{0x89, 'P', 'N'}), ImageFormat::kUnknown);
  EXPECT_NE(decode_error(Bytes{'%', 'P', 'D', 'F'}).find("unsupported image format"),
            std::string::npos);
  EXPECT_NE(decode_error(Bytes{}).find("empty"), std::string::npos);
}

TEST(ImageDecode, PngRoundTripsEveryMode) {
  const int w = 37, h = 23;
  struct Case {
    png_uint_32 format;
    int channels;
  } cases[] = {{PNG_FORMAT_RGB, 3}, {PNG_FORMAT_RGBA, 4}, {PNG_FORMAT_GRAY, 1}, {PNG_FORMAT_GA, 2}};
  for (const Case& c : cases) {
    auto px = pattern(w, h, c.channels, 11 + uint64_t(c.channels));
    Image img = decode_image(png_encode(px, w, h, c.format));
    SCOPED_TRACE(c.channels);
    expect_rgb(img, w, h, to_rgb(px, c.channels));
  }
}

TEST(ImageDecode, PngPaletteIsLookedUp) {
  const int w = 19, h = 17, entries = 200;
  auto cmap = pattern(entries, 1, 3, 99);
  std::vector<uint8_t> idx(size_t(w * h));
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = uint8_t((i * 7) % entries);
  Bytes png = png_encode(idx, w, h, PNG_FORMAT_RGB_COLORMAP, &cmap, entries);
  std::vector<uint8_t> want;
  for (uint8_t k : idx)
    for (int c = 0; c < 3; ++c) want.push_back(cmap[size_t(k) * 3 + size_t(c)]);
  expect_rgb(decode_image(png), w, h, want);
}

uint32_t crc32(const uint8_t* p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
  }
  return ~c;
}

void put_be32(Bytes& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(uint8_t(v >> s));
}

TEST(ImageDecode, PngBombIsRefusedFromItsHeader) {
  Bytes b = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  Bytes ihdr = {'I', 'H', 'D', 'R'};
  put_be32(ihdr, 100000);
  put_be32(ihdr, 100000);
  ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});
  put_be32(b, 13);
  b.insert(b.end(), ihdr.begin(), ihdr.end());
  put_be32(b, crc32(ihdr.data(), ihdr.size()));
  Bytes idat = {'I', 'D', 'A', 'T', 0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01};
  put_be32(b, uint32_t(idat.size() - 4));
  b.insert(b.end(), idat.begin(), idat.end());
  put_be32(b, crc32(idat.data(), idat.size()));
  std::string err = decode_error(b);
  EXPECT_NE(err.find("100000x100000 pixels exceeds the limit of 134217728"), std::string::npos)
      << err;
  // Also when nothing follows the header.
  b.resize(8 + 25);
  err = decode_error(b);
  EXPECT_NE(err.find("100000x100000 pixels exceeds the limit of 134217728"), std::string::npos)
      << err;
}

TEST(ImageDecode, PngTruncatedAndCorruptAreNamed) {
  auto px = pattern(64, 64, 3, 5);
  Bytes png = png_encode(px, 64, 64, PNG_FORMAT_RGB);
  Bytes cut(png.begin(), png.begin() + long(png.size() / 2));
  std::string err = decode_error(cut);
  EXPECT_NE(err.find("PNG"), std::string::npos) << err;
  EXPECT_NE(err.find("truncated"), std::string::npos) << err;
  Bytes bad = png;
  bad[png.size() / 2] ^= 0x5a;  // inside IDAT: its CRC no longer matches
  err = decode_error(bad);
  EXPECT_EQ(err.rfind("corrupt PNG: ", 0), 0u) << err;
}

// ---- BMP: written byte by byte ----

void put_le(Bytes& b, uint32_t v, int n) {
  for (int i = 0; i < n; ++i) b.push_back(uint8_t(v >> (8 * i)));
}

Bytes bmp(int w, int h, int bpp, const std::vector<uint8_t>& palette_bgrx, bool top_down,
          const std::vector<uint8_t>& rows) {
  Bytes b = {'B', 'M'};
  const uint32_t off = 14 + 40 + uint32_t(palette_bgrx.size());
  put_le(b, off + uint32_t(rows.size()), 4);
  put_le(b, 0, 4);
  put_le(b, off, 4);
  put_le(b, 40, 4);
  put_le(b, uint32_t(w), 4);
  put_le(b, uint32_t(top_down ? -h : h), 4);
  put_le(b, 1, 2);
  put_le(b, uint32_t(bpp), 2);
  put_le(b, 0, 4);  // BI_RGB
  put_le(b, uint32_t(rows.size()), 4);
  put_le(b, 2835, 4);
  put_le(b, 2835, 4);
  put_le(b, uint32_t(palette_bgrx.size() / 4), 4);
  put_le(b, 0, 4);
  b.insert(b.end(), palette_bgrx.begin(), palette_bgrx.end());
  b.insert(b.end(), rows.begin(), rows.end());
  return b;
}

TEST(ImageDecode, Bmp24And32BitRowsBottomUpAndTopDown) {
  const int w = 5, h = 3;  // 15-byte rows padded to 16
  auto rgb = pattern(w, h, 3, 21);
  for (int bpp : {24, 32})
    for (bool top_down : {false, true}) {
      const size_t stride = (size_t(w) * size_t(bpp) + 31) / 32 * 4;
      std::vector<uint8_t> rows(stride * h, 0xee);
      for (int y = 0; y < h; ++y) {
        const int fy = top_down ? y : h - 1 - y;
        for (int x = 0; x < w; ++x) {
          uint8_t* d = &rows[size_t(fy) * stride + size_t(x) * size_t(bpp / 8)];
          const uint8_t* s = &rgb[size_t(y * w + x) * 3];
          d[0] = s[2], d[1] = s[1], d[2] = s[0];
          if (bpp == 32) d[3] = uint8_t(x * 40);  // alpha/padding byte, ignored
        }
      }
      SCOPED_TRACE(std::to_string(bpp) + (top_down ? " top-down" : " bottom-up"));
      expect_rgb(decode_image(bmp(w, h, bpp, {}, top_down, rows)), w, h, rgb);
    }
}

TEST(ImageDecode, BmpPalettes8And4And1Bit) {
  for (int bpp : {8, 4, 1}) {
    const int w = 9, h = 4, n = 1 << bpp;
    auto pal = pattern(n, 1, 4, 31 + uint64_t(bpp));
    const size_t stride = (size_t(w) * size_t(bpp) + 31) / 32 * 4;
    std::vector<uint8_t> rows(stride * h, 0);
    std::vector<uint8_t> want(size_t(w * h * 3));
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const int k = (x * 3 + y * 5) % n;
        const int per = 8 / bpp, shift = (per - 1 - x % per) * bpp;
        rows[size_t(h - 1 - y) * stride + size_t(x / per)] |= uint8_t(k << shift);
        for (int c = 0; c < 3; ++c)
          want[size_t(y * w + x) * 3 + size_t(c)] = pal[size_t(k) * 4 + 2 - size_t(c)];
      }
    SCOPED_TRACE(bpp);
    expect_rgb(decode_image(bmp(w, h, bpp, pal, false, rows)), w, h, want);
  }
}

TEST(ImageDecode, BmpErrorsAreNamed) {
  std::vector<uint8_t> rows(16 * 3, 0);
  Bytes ok = bmp(5, 3, 24, {}, false, rows);
  EXPECT_NE(decode_error(Bytes(ok.begin(), ok.end() - 10)).find("truncated BMP"),
            std::string::npos);
  Bytes rle = ok;
  rle[30] = 1;  // BI_RLE8
  EXPECT_NE(decode_error(rle).find("unsupported BMP: compression 1"), std::string::npos);
  Bytes big = bmp(100000, 100000, 24, {}, false, rows);
  EXPECT_NE(decode_error(big).find("100000x100000 pixels exceeds the limit"), std::string::npos);
}

// ---- GIF, WebP and JPEG bombs: headers that claim huge sizes ----

TEST(ImageDecode, GifAndWebpBombsAreRefusedFromTheirHeaders) {
  Bytes gif = {'G', 'I', 'F', '8', '9', 'a', 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, ';'};
  std::string err = decode_error(gif);
  EXPECT_NE(err.find("GIF image of 65535x65535 pixels exceeds the limit"), std::string::npos)
      << err;
  // VP8L: signature 0x2f, then 14-bit width-1 and height-1 (16384 x 16384).
  Bytes webp = {'R', 'I', 'F', 'F', 26,  0,  0, 0, 'W', 'E', 'B',
                'P', 'V', 'P', '8', 'L', 13, 0, 0, 0,   0x2f};
  const uint32_t bits = (16383u) | (16383u << 14);
  put_le(webp, bits, 4);
  webp.insert(webp.end(), {0, 0, 0, 0, 0, 0, 0, 0, 0});
  err = decode_error(webp);
  EXPECT_NE(err.find("WebP image of 16384x16384 pixels exceeds the limit"), std::string::npos)
      << err;
  EXPECT_NE(decode_error(Bytes(webp.begin(), webp.begin() + 22)).find("WebP"), std::string::npos);
}

Bytes jpeg_encode(const std::vector<uint8_t>& rgb, int w, int h) {
  jpeg_compress_struct c{};
  jpeg_error_mgr err{};
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* mem = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &mem, &size);
  c.image_width = JDIMENSION(w);
  c.image_height = JDIMENSION(h);
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 90, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(&rgb[size_t(c.next_scanline) * size_t(w) * 3]);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  Bytes out(mem, mem + size);
  jpeg_destroy_compress(&c);
  std::free(mem);
  return out;
}

TEST(ImageDecode, JpegDecodesAndRefusesBombsAndTruncation) {
  const int w = 48, h = 32;
  std::vector<uint8_t> rgb(size_t(w * h * 3));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c)
        rgb[size_t((y * w + x) * 3 + c)] = uint8_t(x * 2 + y * 2 + c * 30);
  Bytes jpg = jpeg_encode(rgb, w, h);
  Image img = decode_image(jpg);
  ASSERT_EQ(img.width, w);
  ASSERT_EQ(img.height, h);
  int worst = 0;  // lossy: a smooth gradient comes back within a few levels
  for (size_t i = 0; i < rgb.size(); ++i)
    worst = std::max(worst, std::abs(int(img.rgb[i]) - int(rgb[i])));
  EXPECT_LE(worst, 12);

  Bytes bomb = jpg;
  for (size_t i = 2; i + 9 < bomb.size(); ++i)
    if (bomb[i] == 0xff &&
        bomb[i + 1] == 0xc0) {  // SOF0: length(2) precision(1) height(2) width(2)
      bomb[i + 5] = 0xea, bomb[i + 6] = 0x60, bomb[i + 7] = 0xea, bomb[i + 8] = 0x60;
      break;
    }
  std::string err = decode_error(bomb);
  EXPECT_NE(err.find("JPEG image of 60000x60000 pixels exceeds the limit"), std::string::npos)
      << err;
  err = decode_error(Bytes(jpg.begin(), jpg.begin() + long(jpg.size() / 2)));
  EXPECT_NE(err.find("truncated JPEG"), std::string::npos) << err;
  err = decode_error(Bytes(jpg.begin(), jpg.begin() + 40));
  EXPECT_NE(err.find("JPEG"), std::string::npos) << err;
}

// A JPEG with an EXIF APP1 segment (big-endian TIFF, IFD0 holding Orientation) after SOI.
Bytes with_orientation(const Bytes& jpg, int orientation) {
  Bytes app1 = {0xff, 0xe1, 0, 0, 'E', 'x',  'i',  'f', 0, 0, 'M', 'M', 0, 42, 0,
                0,    0,    8, 0, 1,   0x01, 0x12, 0,   3, 0, 0,   0,   1, 0,  uint8_t(orientation),
                0,    0,    0, 0, 0,   0};
  app1[3] = uint8_t(app1.size() - 2);
  Bytes out = jpg;
  out.insert(out.begin() + 2, app1.begin(), app1.end());
  return out;
}

TEST(ImageDecode, ExifOrientationAsPilExifTranspose) {
  const int w = 24, h = 16;
  std::vector<uint8_t> rgb(size_t(w * h * 3));
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = uint8_t(40 + (i * 37) % 170);
  const Bytes jpg = jpeg_encode(rgb, w, h);
  const Image plain = decode_image(jpg);
  // Where output (x, y) reads the stored image, per PIL's Transpose methods.
  auto source = [&](int o, int64_t x, int64_t y) -> std::pair<int64_t, int64_t> {
    switch (o) {
      case 2:
        return {w - 1 - x, y};
      case 3:
        return {w - 1 - x, h - 1 - y};
      case 4:
        return {x, h - 1 - y};
      case 5:
        return {y, x};
      case 6:
        return {y, h - 1 - x};
      case 7:
        return {w - 1 - y, h - 1 - x};
      case 8:
        return {w - 1 - y, x};
    }
    return {x, y};
  };
  for (int o = 1; o <= 8; ++o) {
    SCOPED_TRACE(o);
    const Bytes b = with_orientation(jpg, o);
    const Image img = decode_image(b);
    EXPECT_EQ(decode_image(b, {}, DecodeOptions{.exif_transpose = false}).rgb, plain.rgb);
    ASSERT_EQ(img.width, o >= 5 ? h : w);
    ASSERT_EQ(img.height, o >= 5 ? w : h);
    for (int64_t y = 0; y < img.height; ++y)
      for (int64_t x = 0; x < img.width; ++x) {
        auto [sx, sy] = source(o, x, y);
        for (int c = 0; c < 3; ++c)
          ASSERT_EQ(img.rgb[size_t((y * img.width + x) * 3 + c)],
                    plain.rgb[size_t((sy * w + sx) * 3 + c)]);
      }
  }
  // Orientation 6 is 90 degrees clockwise: the stored top-left pixel lands top-right.
  const Image r6 = decode_image(with_orientation(jpg, 6));
  EXPECT_EQ(r6.rgb[size_t((r6.width - 1) * 3)], plain.rgb[0]);
}

TEST(ImageDecode, LimitsAreConfigurable) {
  auto px = pattern(40, 30, 3, 8);
  Bytes png = png_encode(px, 40, 30, PNG_FORMAT_RGB);
  ImageLimits small;
  small.max_pixels = 40 * 30 - 1;
  EXPECT_NE(decode_error(png, small).find("PNG image of 40x30 pixels exceeds the limit of 1199"),
            std::string::npos);
  small.max_pixels = 40 * 30;
  EXPECT_NO_THROW(decode_image(png, small));
  small.max_bytes = int64_t(png.size()) - 1;
  EXPECT_NE(decode_error(png, small).find("exceeds the limit of"), std::string::npos);
}

}  // namespace
}  // namespace vtllm::multimodal
