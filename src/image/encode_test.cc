// The encoders: PNG round-trips exactly through k3's own decoder, JPEG decodes to the same size with
// pixels close to the input, bad sizes and buffers are errors, random pixels follow the seed.
#include "src/image/encode.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <span>

#include "src/image/data_url.h"
#include "src/image/decode.h"

namespace k3::image {
namespace {

std::span<const uint8_t> AsBytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(EncodeTest, PngRoundTripsExactly) {
  const std::vector<uint8_t> rgb = RandomRgb(37, 23, 5);
  auto png = EncodePng(rgb, 37, 23);
  ASSERT_TRUE(png.ok()) << png.status().ToString();
  EXPECT_EQ(SniffFormat(AsBytes(*png)), ImageFormat::kPng);
  auto decoded = DecodeImage(AsBytes(*png), DefaultDecodeLimits());
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->width, 37);
  EXPECT_EQ(decoded->height, 23);
  EXPECT_EQ(decoded->mode, PixelMode::kRGB);
  EXPECT_EQ(decoded->pixels, rgb);
}

TEST(EncodeTest, JpegDecodesToTheSameSizeAndSimilarPixels) {
  std::vector<uint8_t> rgb(64 * 48 * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>((i / 3) % 64 * 4);  // smooth ramp
  auto jpeg = EncodeJpeg(rgb, 64, 48);
  ASSERT_TRUE(jpeg.ok()) << jpeg.status().ToString();
  EXPECT_EQ(SniffFormat(AsBytes(*jpeg)), ImageFormat::kJpeg);
  auto decoded = DecodeImage(AsBytes(*jpeg), DefaultDecodeLimits());
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ASSERT_EQ(decoded->width, 64);
  ASSERT_EQ(decoded->height, 48);
  ASSERT_EQ(decoded->pixels.size(), rgb.size());
  double error = 0;
  for (size_t i = 0; i < rgb.size(); ++i) error += std::abs(int(decoded->pixels[i]) - int(rgb[i]));
  EXPECT_LT(error / rgb.size(), 4.0);
}

TEST(EncodeTest, DataUrlParsesBackToTheBytes) {
  auto png = EncodePng(RandomRgb(3, 2, 1), 3, 2);
  ASSERT_TRUE(png.ok());
  auto url = ParseDataUrl(ToDataUrl(EncodeFormat::kPng, *png));
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  EXPECT_EQ(url->mime_type, "image/png");
  EXPECT_EQ(url->bytes, *png);
  EXPECT_EQ(ToDataUrl(EncodeFormat::kJpeg, "x").rfind("data:image/jpeg;base64,", 0), 0u);
}

TEST(EncodeTest, BadSizesAndBuffersAreErrors) {
  EXPECT_FALSE(EncodePng({}, 0, 5).ok());
  EXPECT_FALSE(EncodeJpeg({}, 5, -1).ok());
  EXPECT_FALSE(EncodePng(std::vector<uint8_t>(10), 2, 2).ok());
  EXPECT_FALSE(EncodeJpeg(std::vector<uint8_t>(12), 2, 2, 0).ok());
  EXPECT_FALSE(EncodePng(std::vector<uint8_t>(3 * 70000), 70000, 1).ok());
}

TEST(EncodeTest, RandomPixelsFollowTheSeed) {
  EXPECT_EQ(RandomRgb(9, 7, 3), RandomRgb(9, 7, 3));
  EXPECT_NE(RandomRgb(9, 7, 3), RandomRgb(9, 7, 4));
  EXPECT_EQ(RandomRgb(9, 7, 3).size(), 9u * 7 * 3);
}

}  // namespace
}  // namespace k3::image
