// Tests for base64.
#include "src/base/base64.h"

#include <gtest/gtest.h>

namespace k3 {
namespace {

TEST(Base64Test, RoundTripsAllLengthsAndBytes) {
  std::string bytes;
  for (int i = 0; i < 300; ++i) {
    const std::string encoded = Base64Encode(bytes);
    auto decoded = Base64Decode(encoded);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(*decoded, bytes);
    bytes.push_back(static_cast<char>(i * 7));
  }
  EXPECT_EQ(Base64Encode("Hello"), "SGVsbG8=");
  EXPECT_EQ(Base64Encode(" world"), "IHdvcmxk");
}

TEST(Base64Test, RejectsMalformedText) {
  EXPECT_FALSE(Base64Decode("abc").ok());
  EXPECT_FALSE(Base64Decode("ab!d").ok());
  EXPECT_FALSE(Base64Decode("a===").ok());
  EXPECT_FALSE(Base64Decode("ab=c").ok());
  EXPECT_FALSE(Base64Decode("ab==abcd").ok());
}

}  // namespace
}  // namespace k3
