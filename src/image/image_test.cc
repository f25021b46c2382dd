// k3_image: K3's geometry rule, processor config parsing, data URLs, every decoder on valid input, the
// processor's chessboard / padding / patch layout, and hostile input (oversized headers refused before
// decoding, PNG inflate bombs, truncated and corrupt files of each format, wrong MIME, SVG, bad
// base64). Pixel equality with Pillow is tests/image/compare_pillow.py (ctest image_pillow_compare).
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "src/base/base64.h"
#include "src/image/image.h"
#include "src/image/image_test_files.h"

namespace k3::image {
namespace {

using testing::Bytes;

std::span<const uint8_t> Span(const Bytes& b) { return {b.data(), b.size()}; }

ImageGeometry Plan(int w, int h) { return PlanGeometry({w, h}, K3ProcessorConfig()); }

void ExpectRefused(const Bytes& bytes, std::string_view needle,
                   const DecodeLimits& limits = DefaultDecodeLimits()) {
  auto decoded = DecodeImage(Span(bytes), limits);
  ASSERT_FALSE(decoded.ok()) << "decoded an image that should be refused (" << needle << ")";
  EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidArgument) << decoded.status().ToString();
  EXPECT_NE(decoded.status().message().find(needle), std::string::npos) << decoded.status().message();
}

TEST(ImageGeometryTest, KnownSizes) {
  // vision.md: the patch budget alone bounds the token count.
  EXPECT_EQ(Plan(20000, 20000).num_tokens, 16641);
  EXPECT_EQ(Plan(8000, 6000).num_tokens, 16428);
  const ImageGeometry big = Plan(20000, 20000);
  EXPECT_EQ(big.resized_width, 3585);
  EXPECT_EQ(big.padded_width, 3612);
  EXPECT_EQ(big.grid_w, 258);
  // 4000x3000 stays under the 65,536-patch budget: no resize, 143 x 108 merged tokens.
  const ImageGeometry photo = Plan(4000, 3000);
  EXPECT_EQ(photo.resized_width, 4000);
  EXPECT_EQ(photo.resized_height, 3000);
  EXPECT_EQ(photo.num_tokens, 143 * 108);
  const ImageGeometry one = Plan(1, 1);
  EXPECT_EQ(one.resized_width, 1);
  EXPECT_EQ(one.padded_width, 28);
  EXPECT_EQ(one.padded_height, 28);
  EXPECT_EQ(one.grid_h, 2);
  EXPECT_EQ(one.num_tokens, 1);
}

TEST(ImageGeometryTest, ExtremeAspectRatiosHitTheOneSideLimit) {
  const ImageGeometry wide = Plan(100000, 1);
  EXPECT_EQ(wide.resized_width, 7167);  // int(100000 * (7168 / 100000)): the float product is 7167.99...
  EXPECT_EQ(wide.resized_height, 1);
  EXPECT_EQ(wide.num_tokens, 256);
  const ImageGeometry tall = Plan(3, 5000);
  EXPECT_EQ(tall.resized_height, 5000);
  EXPECT_EQ(tall.num_tokens, 179);
  const ImageGeometry side = Plan(8000, 30);
  EXPECT_EQ(side.resized_width, 7168);
  EXPECT_EQ(side.resized_height, 26);  // int(30 * 7168 / 8000)
}

TEST(ImageGeometryTest, FixedOutputTokensOverrideTheGrid) {
  ProcessorConfig config = K3ProcessorConfig();
  config.fixed_output_tokens = 7;
  const ImageGeometry g = PlanGeometry({500, 500}, config);
  EXPECT_EQ(g.num_tokens, 7);
  EXPECT_EQ(g.grid_h, 36);
}

constexpr char kK3Preprocessor[] = R"({
  "auto_map": {"AutoImageProcessor": "kimi_k3_vision_processing.KimiK3VisionProcessor"},
  "media_proc_cfg": {
    "in_patch_limit": 65536, "patch_size": 14, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
    "merge_kernel_size": 2, "fixed_output_tokens": null, "patch_limit_on_one_side": 512,
    "transparent_bg_config": {"pattern": "chessboard", "chessboard_square_size": 8,
      "chessboard_square_on_top_left": true, "chessboard_white_value": 255, "chessboard_gray_value": 180},
    "transparent_bg_fill_stage": "after_resize"}})";

TEST(ProcessorConfigTest, ParsesTheCheckpointFile) {
  auto parsed = ParseProcessorConfig(kK3Preprocessor, "preprocessor_config.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const ProcessorConfig k3 = K3ProcessorConfig();
  EXPECT_EQ(parsed->patch_size, k3.patch_size);
  EXPECT_EQ(parsed->merge_kernel, k3.merge_kernel);
  EXPECT_EQ(parsed->in_patch_limit, 65536);
  EXPECT_EQ(parsed->patch_limit_on_one_side, 512);
  EXPECT_FALSE(parsed->fixed_output_tokens.has_value());
  EXPECT_EQ(parsed->image_mean, k3.image_mean);
  EXPECT_EQ(parsed->image_std, k3.image_std);
  ASSERT_TRUE(parsed->transparent_bg.has_value());
  EXPECT_EQ(parsed->transparent_bg->pattern, BackgroundPattern::kChessboard);
  EXPECT_EQ(parsed->transparent_bg->chessboard_square_size, 8);
  EXPECT_EQ(parsed->transparent_bg->chessboard_gray_value, 180);
  EXPECT_EQ(parsed->fill_stage, FillStage::kAfterResize);
}

TEST(ProcessorConfigTest, ReferenceDefaultsAndErrorsNameTheField) {
  auto legacy = ParseProcessorConfig(
      R"({"patch_size": 14, "merge_kernel_size": [2, 2], "in_patch_limit": 16384, "patch_limit_on_one_side": 512,
          "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]})",
      "p.json");
  ASSERT_TRUE(legacy.ok()) << legacy.status().ToString();
  EXPECT_EQ(legacy->in_patch_limit, 16384);
  EXPECT_FALSE(legacy->transparent_bg.has_value());  // absent: alpha is dropped
  EXPECT_EQ(legacy->fill_stage, FillStage::kBeforeResize);

  auto missing = ParseProcessorConfig(R"({"media_proc_cfg": {"patch_size": 14}})", "pp.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("pp.json: media_proc_cfg.merge_kernel_size is missing"),
            std::string::npos)
      << missing.status().message();
  std::string bad_stage = kK3Preprocessor;
  bad_stage.replace(bad_stage.find("after_resize"), 12, "at_the_end");
  auto stage = ParseProcessorConfig(bad_stage, "pp.json");
  ASSERT_FALSE(stage.ok());
  EXPECT_NE(stage.status().message().find("transparent_bg_fill_stage"), std::string::npos);
  std::string bad_pattern = kK3Preprocessor;
  bad_pattern.replace(bad_pattern.find("\"chessboard\""), 12, "\"plaid\"");
  EXPECT_FALSE(ParseProcessorConfig(bad_pattern, "pp.json").ok());
  EXPECT_FALSE(ParseProcessorConfig("{", "pp.json").ok());
}

TEST(DataUrlTest, ParsesBase64AndPercentPayloads) {
  auto url = ParseDataUrl("data:Image/PNG;base64,aGVs\nbG8=");
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  EXPECT_EQ(url->mime_type, "image/png");
  EXPECT_EQ(url->bytes, "hello");
  auto with_params = ParseDataUrl("data:image/jpeg;name=a.jpg;base64,AAE=");
  ASSERT_TRUE(with_params.ok());
  EXPECT_EQ(with_params->bytes, std::string("\0\1", 2));
  auto plain = ParseDataUrl("data:,a%20b%ff");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->mime_type, "");
  EXPECT_EQ(plain->bytes, "a b\xff");
}

TEST(DataUrlTest, RefusesMalformedUrls) {
  for (const char* bad :
       {"https://example.com/a.png", "image/png;base64,AAAA", "data:image/png;base64",
        "data:image/png;base64,AAA", "data:image/png;base64,AA!A", "data:image/png;base64,A===", "data:,%zz",
        "data:,%4", "data:png;base64,AAAA", "data:image/png;base64;x=y,AAAA"}) {
    auto url = ParseDataUrl(bad);
    EXPECT_FALSE(url.ok()) << bad;
    if (!url.ok()) {
      EXPECT_EQ(url.status().code(), StatusCode::kInvalidArgument) << bad;
    }
  }
  auto http = ParseDataUrl("https://example.com/a.png");
  EXPECT_NE(http.status().message().find("https: URL"), std::string::npos) << http.status().message();
  auto b64 = ParseDataUrl("data:image/png;base64,AA!A");
  EXPECT_NE(b64.status().message().find("base64"), std::string::npos) << b64.status().message();
}

TEST(DecodeTest, EveryFormatDecodesToPillowsMode) {
  const Bytes rgb = testing::Pattern(33, 21, 3, 1);
  auto png = DecodeImage(Span(testing::Png(rgb, 33, 21, 2)), DefaultDecodeLimits());
  ASSERT_TRUE(png.ok()) << png.status().ToString();
  EXPECT_EQ(png->format, "png");
  EXPECT_EQ(png->mode, PixelMode::kRGB);
  EXPECT_EQ(png->pixels, rgb);

  const Bytes la = testing::Pattern(9, 7, 2, 2);
  auto la_png = DecodeImage(Span(testing::Png(la, 9, 7, 4)), DefaultDecodeLimits());
  ASSERT_TRUE(la_png.ok());
  EXPECT_EQ(la_png->mode, PixelMode::kLA);
  EXPECT_EQ(la_png->pixels, la);

  auto jpeg = DecodeImage(Span(testing::Jpeg(rgb, 33, 21, /*progressive=*/true)), DefaultDecodeLimits());
  ASSERT_TRUE(jpeg.ok()) << jpeg.status().ToString();
  EXPECT_EQ(jpeg->format, "jpeg");
  EXPECT_EQ(jpeg->mode, PixelMode::kRGB);
  EXPECT_EQ(jpeg->width, 33);

  const Bytes rgba = testing::Pattern(20, 10, 4, 3);
  auto webp = DecodeImage(Span(testing::Webp(rgba, 20, 10, true, true)), DefaultDecodeLimits());
  ASSERT_TRUE(webp.ok()) << webp.status().ToString();
  EXPECT_EQ(webp->mode, PixelMode::kRGBA);
  EXPECT_EQ(webp->pixels, rgba);  // lossless
  auto lossy = DecodeImage(Span(testing::Webp(rgb, 33, 21, false, false)), DefaultDecodeLimits());
  ASSERT_TRUE(lossy.ok());
  EXPECT_EQ(lossy->mode, PixelMode::kRGB);

  Bytes indices(16 * 8);
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<uint8_t>(i);
  auto gif = DecodeImage(Span(testing::Gif(indices, 16, 8, 5, 20, 9)), DefaultDecodeLimits());
  ASSERT_TRUE(gif.ok()) << gif.status().ToString();
  EXPECT_EQ(gif->mode, PixelMode::kP);
  EXPECT_EQ(gif->width, 20);  // the logical screen
  EXPECT_TRUE(gif->has_transparency);
  EXPECT_EQ(gif->palette[5 * 4 + 3], 0);
  EXPECT_EQ(gif->pixels[1], 1);
  EXPECT_EQ(gif->pixels[19], 5);  // outside the frame: the transparent index
}

TEST(ProcessorTest, TransparentPixelsShowTheChessboardAfterResize) {
  Bytes clear(28 * 28 * 4, 0);  // fully transparent black
  auto out = ProcessImage(Span(testing::Png(clear, 28, 28, 6)), K3ProcessorConfig(), DefaultDecodeLimits());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->patches.size(), 4u * 588);
  // Patch 0, channel 0: row 0 is white for x < 8, grey (180) for 8 <= x < 14.
  EXPECT_FLOAT_EQ(out->patches[0], 1.0f);
  EXPECT_FLOAT_EQ(out->patches[8], static_cast<float>(static_cast<float>(180 / 255.0) - 0.5) * 2);
  // Row 8 (y = 8) starts grey.
  EXPECT_FLOAT_EQ(out->patches[8 * 14], out->patches[8]);

  ProcessorConfig no_bg = K3ProcessorConfig();
  no_bg.transparent_bg.reset();  // the reference without transparent_bg_config: alpha dropped
  auto dropped = ProcessImage(Span(testing::Png(clear, 28, 28, 6)), no_bg, DefaultDecodeLimits());
  ASSERT_TRUE(dropped.ok());
  EXPECT_FLOAT_EQ(dropped->patches[0], -1.0f);
}

TEST(ProcessorTest, PadsWithBlackAndLaysOutPatchesChannelFirst) {
  Bytes rgb(30 * 30 * 3);
  for (int y = 0; y < 30; ++y)
    for (int x = 0; x < 30; ++x)
      for (int c = 0; c < 3; ++c)
        rgb[(y * 30 + x) * 3 + c] = static_cast<uint8_t>(c == 0 ? x * 8 : c == 1 ? y * 8 : 255);
  auto out = ProcessImage(Span(testing::Png(rgb, 30, 30, 2)), K3ProcessorConfig(), DefaultDecodeLimits(),
                          "image/png");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const ImageGeometry& g = out->geometry;
  EXPECT_EQ(g.padded_width, 56);
  EXPECT_EQ(g.grid_w, 4);
  EXPECT_EQ(g.num_tokens, 4);
  ASSERT_EQ(out->patches.size(), 16u * 588);
  const auto value = [&](int patch, int c, int py, int px) {
    return out->patches[patch * 588 + c * 196 + py * 14 + px];
  };
  const auto norm = [](int v) { return static_cast<float>(static_cast<float>(v / 255.0) - 0.5) * 2; };
  // Pixel (x = 17, y = 2) is in patch 1, column 3, row 2.
  EXPECT_FLOAT_EQ(value(1, 0, 2, 3), norm(17 * 8));
  EXPECT_FLOAT_EQ(value(1, 1, 2, 3), norm(2 * 8));
  EXPECT_FLOAT_EQ(value(1, 2, 2, 3), 1.0f);
  // x = 30 is padding: -1 in every channel; so is the whole last patch.
  EXPECT_FLOAT_EQ(value(2, 0, 0, 2), -1.0f);
  EXPECT_FLOAT_EQ(value(15, 2, 13, 13), -1.0f);
}

TEST(HostileInputTest, HugeHeadersAreRefusedBeforeDecoding) {
  // PNG 100000 x 100000: the IDAT below would never be inflated.
  const Bytes png = testing::PngWithHeader(100000, 100000, 8, 2, testing::Deflate(std::string(1000, '\0')));
  ExpectRefused(png, "png image is 100000x100000");
  // JPEG sides are 16-bit and libjpeg stops at 65500: 60000 x 60000 (3.6 G pixels).
  Bytes jpeg = testing::Jpeg(testing::Pattern(16, 16, 3, 4), 16, 16);
  for (size_t i = 0; i + 8 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && (jpeg[i + 1] == 0xC0 || jpeg[i + 1] == 0xC2)) {  // SOF: FF C0 len(2) P Y(2) X(2)
      jpeg[i + 5] = jpeg[i + 7] = 0xEA;                                     // 60000 = 0xEA60
      jpeg[i + 6] = jpeg[i + 8] = 0x60;
      break;
    }
  }
  ExpectRefused(jpeg, "jpeg image is 60000x60000");
  Bytes gif = testing::Gif(Bytes(4, 0), 2, 2, -1);
  gif[6] = gif[7] = gif[8] = gif[9] = 0xFF;  // logical screen 65535 x 65535
  ExpectRefused(gif, "gif image is 65535x65535");
  // A 2x2 screen whose frame sits at x = 60000: the canvas Pillow would grow to is checked too.
  Bytes far = testing::Gif(Bytes(4, 0), 2, 2, -1);
  for (size_t i = 13 + 768; i + 2 < far.size(); ++i) {
    if (far[i] == ',') {  // image descriptor: ',' left(2, little-endian) top(2) width(2) height(2) flags
      far[i + 1] = 0x60;
      far[i + 2] = 0xEA;
      break;
    }
  }
  ExpectRefused(far, "gif image is 60002x2; the largest side accepted is 32768");
  // WebP: an animated VP8X canvas of 60000 x 60000 in front of a real 1x1 lossless bitstream (libwebp
  // itself refuses canvases of 2^32 pixels or more, so 100000 x 100000 never reaches our check).
  const Bytes small = testing::Webp(Bytes(4, 255), 1, 1, true, true);
  const std::string vp8l(small.begin() + 12, small.end());  // the VP8L chunk
  std::string vp8x = "VP8X";
  const uint32_t side = 60000 - 1;
  vp8x += std::string("\x0a\0\0\0", 4) + std::string("\x12\0\0\0", 4);  // alpha + animation flags
  vp8x +=
      {static_cast<char>(side & 0xFF), static_cast<char>((side >> 8) & 0xFF), static_cast<char>(side >> 16)};
  vp8x +=
      {static_cast<char>(side & 0xFF), static_cast<char>((side >> 8) & 0xFF), static_cast<char>(side >> 16)};
  std::string riff = "RIFF";
  const uint32_t riff_size = static_cast<uint32_t>(4 + vp8x.size() + vp8l.size());
  for (int s = 0; s < 32; s += 8) riff += static_cast<char>((riff_size >> s) & 0xFF);
  riff += "WEBP" + vp8x + vp8l;
  ExpectRefused(Bytes(riff.begin(), riff.end()), "webp image is 60000x60000");
  // The side limit alone, and the byte limit.
  DecodeLimits tight = DefaultDecodeLimits();
  tight.max_side = 32;
  ExpectRefused(testing::Png(testing::Pattern(33, 1, 1, 5), 33, 1, 0), "largest side accepted is 32", tight);
  tight = DefaultDecodeLimits();
  tight.max_bytes = 10;
  ExpectRefused(testing::Png(testing::Pattern(3, 3, 1, 5), 3, 3, 0), "at most 10 bytes", tight);
}

TEST(HostileInputTest, PngInflateBombsStayCheap) {
  // A 1x1 image whose IDAT inflates to 64 MiB, and a 64 MiB zTXt chunk: neither is inflated in full.
  const std::string zeros(64 << 20, '\0');
  const std::string bomb = testing::Deflate(zeros, 9);
  ASSERT_LT(bomb.size(), 100000u);
  const auto start = std::chrono::steady_clock::now();
  auto idat = DecodeImage(Span(testing::PngWithHeader(1, 1, 8, 0, bomb)), DefaultDecodeLimits());
  ASSERT_TRUE(idat.ok()) << idat.status().ToString();
  EXPECT_EQ(idat->pixels, Bytes{0});
  const std::string ztxt = testing::PngChunk("zTXt", std::string("Comment\0\0", 9) + bomb);
  auto text =
      DecodeImage(Span(testing::PngWithHeader(1, 1, 8, 0, testing::Deflate(std::string(2, '\0')), ztxt)),
                  DefaultDecodeLimits());
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 2.0);  // inflating 128 MiB would take longer under the sanitizers
  // Refused by the pixel budget although the file is small: 20000 x 20000 grey.
  ExpectRefused(testing::PngWithHeader(20000, 20000, 8, 0, bomb), "at most 51380224 pixels");
}

TEST(HostileInputTest, TruncatedFilesOfEachFormatAreErrors) {
  const Bytes rgb = testing::Pattern(64, 48, 3, 6);
  Bytes indices(64 * 48);
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<uint8_t>((i * 37) % 251);
  const std::vector<std::pair<const char*, Bytes>> files = {
      {"png", testing::Png(rgb, 64, 48, 2)},
      {"jpeg", testing::Jpeg(rgb, 64, 48)},
      {"jpeg", testing::Jpeg(rgb, 64, 48, /*progressive=*/true)},
      {"webp", testing::Webp(rgb, 64, 48, false, false)},
      {"webp", testing::Webp(rgb, 64, 48, false, true)},
      {"gif", testing::Gif(indices, 64, 48, -1)},
  };
  for (const auto& [format, file] : files) {
    ASSERT_TRUE(DecodeImage(Span(file), DefaultDecodeLimits()).ok()) << format;
    for (double fraction : {0.02, 0.3, 0.6, 0.9}) {
      const Bytes cut(file.begin(), file.begin() + static_cast<ptrdiff_t>(file.size() * fraction));
      auto decoded = DecodeImage(Span(cut), DefaultDecodeLimits());
      EXPECT_FALSE(decoded.ok()) << format << " truncated to " << cut.size() << " of " << file.size();
      if (!decoded.ok()) {
        EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidArgument);
      }
    }
  }
}

TEST(HostileInputTest, CorruptFilesOfEachFormatAreErrors) {
  const Bytes rgb = testing::Pattern(40, 30, 3, 7);
  Bytes png = testing::Png(rgb, 40, 30, 2);
  png[png.size() - 20] ^= 0x55;  // inside IDAT: CRC mismatch
  ExpectRefused(png, "png:");
  Bytes png_type = testing::Png(rgb, 40, 30, 2);
  png_type[25] = 7;  // IHDR colour type 7 (CRC fixed below)
  const std::string ihdr(png_type.begin() + 12, png_type.begin() + 29);
  const std::string fixed = testing::PngChunk("IHDR", ihdr.substr(4));
  std::copy(fixed.begin(), fixed.end(), png_type.begin() + 8);
  ExpectRefused(png_type, "png:");

  Bytes jpeg = testing::Jpeg(rgb, 40, 30);
  for (size_t i = 0; i + 1 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC4) {  // DHT: make the table's counts overflow
      for (size_t k = i + 5; k < i + 21; ++k) jpeg[k] = 0xFF;
      break;
    }
  }
  ExpectRefused(jpeg, "jpeg:");

  Bytes webp = testing::Webp(rgb, 40, 30, false, false);
  for (size_t i = 20; i < 40 && i < webp.size(); ++i) webp[i] ^= 0xA5;  // the VP8 frame header
  ExpectRefused(webp, "webp:");

  Bytes gif = testing::Gif(Bytes(40 * 30, 3), 40, 30, -1);
  // The LZW minimum code size follows the image descriptor (10 bytes after ','): 12 is invalid.
  for (size_t i = 13 + 768; i < gif.size(); ++i) {
    if (gif[i] == ',') {
      gif[i + 10] = 12;
      break;
    }
  }
  ExpectRefused(gif, "gif:");

  ExpectRefused(Bytes{}, "empty");
  ExpectRefused(Bytes{'G', 'I', 'F', '8', '9', 'a'}, "gif:");
}

TEST(HostileInputTest, WrongMimeSvgAndUnknownBytes) {
  const Bytes png = testing::Png(testing::Pattern(4, 4, 3, 8), 4, 4, 2);
  auto wrong = ProcessImage(Span(png), K3ProcessorConfig(), DefaultDecodeLimits(), "image/jpeg");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("declared as image/jpeg but the bytes are a png image"),
            std::string::npos)
      << wrong.status().message();
  EXPECT_TRUE(
      ProcessImage(Span(png), K3ProcessorConfig(), DefaultDecodeLimits(), "image/png; charset=x").ok());
  EXPECT_TRUE(
      ProcessImage(Span(png), K3ProcessorConfig(), DefaultDecodeLimits(), "application/octet-stream").ok());
  auto text = ProcessImage(Span(png), K3ProcessorConfig(), DefaultDecodeLimits(), "text/plain");
  EXPECT_NE(text.status().message().find("not an image"), std::string::npos);
  auto bmp_mime = ProcessImage(Span(png), K3ProcessorConfig(), DefaultDecodeLimits(), "image/bmp");
  EXPECT_NE(bmp_mime.status().message().find("unsupported image type image/bmp"), std::string::npos);

  const std::string svg = "  <?xml version=\"1.0\"?><svg xmlns=\"http://www.w3.org/2000/svg\"/>";
  const Bytes svg_bytes(svg.begin(), svg.end());
  ExpectRefused(svg_bytes, "SVG");
  auto svg_mime = ProcessImage(Span(svg_bytes), K3ProcessorConfig(), DefaultDecodeLimits(), "image/svg+xml");
  EXPECT_NE(svg_mime.status().message().find("SVG"), std::string::npos);
  ExpectRefused(Bytes{'B', 'M', 0, 0, 0, 0}, "BMP");
  ExpectRefused(Bytes{'h', 'e', 'l', 'l', 'o'}, "not a PNG, JPEG, WebP or GIF");
}

TEST(HostileInputTest, DataUrlToProcessorEndToEnd) {
  const Bytes png = testing::Png(testing::Pattern(5, 3, 3, 9), 5, 3, 2);
  const std::string url = "data:image/png;base64," + Base64Encode(std::string(png.begin(), png.end()));
  auto parsed = ParseDataUrl(url);
  ASSERT_TRUE(parsed.ok());
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(parsed->bytes.data()),
                                       parsed->bytes.size());
  auto out = ProcessImage(bytes, K3ProcessorConfig(), DefaultDecodeLimits(), parsed->mime_type);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->format, "png");
  EXPECT_EQ(out->geometry.width, 5);
  EXPECT_EQ(out->geometry.num_tokens, 1);
}

}  // namespace
}  // namespace k3::image
