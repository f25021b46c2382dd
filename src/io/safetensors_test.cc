// Tests for safetensors reading and writing: round trips over every dtype, the writer's layout, and one
// test per kind of corrupt header (each a clear Status naming the file and the tensor, never a crash).
#include "src/io/safetensors.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <algorithm>
#include <gtest/gtest.h>

#include "src/base/file.h"

namespace k3::io {
namespace {

using ::testing::HasSubstr;

std::string TestDir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "/k3_safetensors_test_" + std::to_string(::getpid()) + "_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TensorToWrite MakeTensor(std::string name, DType dtype, std::vector<int64_t> shape, uint8_t seed) {
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  std::vector<uint8_t> data(static_cast<size_t>(numel) * DTypeSize(dtype));
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(seed + i * 7);
  return TensorToWrite{std::move(name), dtype, std::move(shape), std::move(data)};
}

// A safetensors image from a header text and a data area; header_len overrides the length field.
std::vector<uint8_t> Image(const std::string& header, size_t data_bytes, int64_t header_len = -1) {
  const uint64_t len = header_len >= 0 ? static_cast<uint64_t>(header_len) : header.size();
  // Sized once up front: growing a vector from 8 bytes trips g++ 12's -Warray-bounds at -O3.
  std::vector<uint8_t> bytes(8 + header.size() + data_bytes, 0xab);
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>(len >> (8 * i));
  std::copy(header.begin(), header.end(), bytes.begin() + 8);
  return bytes;
}

Result<std::unique_ptr<SafetensorsFile>> ParseImage(const std::vector<uint8_t>& bytes) {
  return SafetensorsFile::Parse(bytes.data(), bytes.size(), "shard.safetensors");
}

void ExpectError(const Result<std::unique_ptr<SafetensorsFile>>& file, StatusCode code,
                 const std::vector<std::string>& parts) {
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), code) << file.status().ToString();
  EXPECT_THAT(file.status().message(), HasSubstr("shard.safetensors"));
  for (const std::string& part : parts) EXPECT_THAT(file.status().message(), HasSubstr(part));
}

TEST(DTypeTest, NamesAndSizes) {
  const std::vector<std::pair<std::string, size_t>> expected = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"I16", 2},  {"U16", 2}, {"I32", 4}, {"U32", 4},
      {"I64", 8},  {"U64", 8}, {"F16", 2}, {"BF16", 2}, {"F32", 4}, {"F64", 8},
  };
  ASSERT_EQ(expected.size(), static_cast<size_t>(DType::kSentinel));
  for (size_t i = 0; i < expected.size(); ++i) {
    const DType dtype = static_cast<DType>(i);
    EXPECT_EQ(DTypeName(dtype), expected[i].first);
    EXPECT_EQ(DTypeSize(dtype), expected[i].second);
    EXPECT_EQ(ParseDType(expected[i].first), dtype);
  }
  EXPECT_EQ(ParseDType("F8_E4M3"), std::nullopt);
  EXPECT_EQ(ParseDType("bf16"), std::nullopt);
  EXPECT_EQ(DTypeSize(DType::kSentinel), 0u);
}

TEST(SafetensorsTest, RoundTripsEveryDType) {
  const std::string dir = TestDir("every_dtype");
  std::vector<TensorToWrite> tensors;
  for (int i = 0; i < static_cast<int>(DType::kSentinel); ++i) {
    const DType dtype = static_cast<DType>(i);
    tensors.push_back(
        MakeTensor(fmt::format("t.{}", DTypeName(dtype)), dtype, {3, i + 1}, static_cast<uint8_t>(i)));
  }
  tensors.push_back(MakeTensor("empty", DType::kF32, {0, 5}, 0));
  tensors.push_back(MakeTensor("scalar", DType::kI64, {}, 9));
  tensors.push_back(MakeTensor("odd_bytes", DType::kU8, {3}, 1));  // would misalign what follows if first
  const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"writer", "k3"}};
  const std::string path = dir + "/model.safetensors";
  ASSERT_TRUE(WriteSafetensors(path, tensors, metadata).ok());

  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->path(), path);
  EXPECT_EQ((*file)->metadata(), metadata);
  ASSERT_EQ((*file)->tensors().size(), tensors.size());
  for (const TensorToWrite& expected : tensors) {
    const TensorView* view = (*file)->Find(expected.name);
    ASSERT_NE(view, nullptr) << expected.name;
    EXPECT_EQ(view->name, expected.name);
    EXPECT_EQ(view->dtype, expected.dtype);
    EXPECT_EQ(view->shape, expected.shape);
    ASSERT_EQ(view->nbytes, expected.data.size());
    if (view->nbytes > 0) {
      EXPECT_EQ(std::memcmp(view->data, expected.data.data(), view->nbytes), 0) << expected.name;
    }
    EXPECT_EQ(reinterpret_cast<uintptr_t>(view->data) % DTypeSize(view->dtype), 0u) << expected.name;
  }
  EXPECT_EQ((*file)->Find("t.F32")->ShapeString(), "[3, 12]");
  EXPECT_EQ((*file)->Find("t.F32")->numel(), 36);
  EXPECT_EQ((*file)->Find("scalar")->numel(), 1);
  EXPECT_EQ((*file)->Find("scalar")->ShapeString(), "[]");
  EXPECT_EQ((*file)->Find("missing"), nullptr);
  std::filesystem::remove_all(dir);
}

TEST(SafetensorsTest, WriterPadsHeaderWithSpacesToMultipleOf8) {
  const std::string dir = TestDir("padding");
  const std::string path = dir + "/a.safetensors";
  ASSERT_TRUE(WriteSafetensors(path, {MakeTensor("w", DType::kBF16, {2, 3}, 0)}).ok());
  auto bytes = ReadFileToString(path);
  ASSERT_TRUE(bytes.ok());
  uint64_t len = 0;
  std::memcpy(&len, bytes->data(), 8);  // little-endian host (x86-64, arm64)
  EXPECT_EQ(len % 8, 0u);
  EXPECT_EQ(bytes->size(), 8 + len + 12);
  const std::string header = bytes->substr(8, len);
  EXPECT_EQ(header.front(), '{');
  EXPECT_EQ(header.find_last_not_of(' '), header.rfind('}'));
  EXPECT_THAT(header, HasSubstr("\"data_offsets\":[0,12]"));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp." + std::to_string(::getpid())));
  std::filesystem::remove_all(dir);
}

TEST(SafetensorsTest, WriterRejectsBadTensors) {
  const std::string dir = TestDir("writer_errors");
  const std::string path = dir + "/bad.safetensors";
  TensorToWrite short_data = MakeTensor("w", DType::kF32, {2, 2}, 0);
  short_data.data.pop_back();
  Status status = WriteSafetensors(path, {short_data});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("tensor 'w' (F32 [2, 2]) needs 16 bytes but holds 15"));
  status = WriteSafetensors(path, {MakeTensor("w", DType::kU8, {1}, 0), MakeTensor("w", DType::kU8, {1}, 0)});
  EXPECT_THAT(status.message(), HasSubstr("given twice"));
  status = WriteSafetensors(path, {MakeTensor("__metadata__", DType::kU8, {1}, 0)});
  EXPECT_THAT(status.message(), HasSubstr("reserved"));
  TensorToWrite negative{"n", DType::kU8, {-1}, {}};
  EXPECT_THAT(WriteSafetensors(path, {negative}).message(), HasSubstr("invalid shape"));
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_EQ(WriteSafetensors(dir + "/no/such/dir/x.safetensors", {}).code(), StatusCode::kIoError);
  std::filesystem::remove_all(dir);
}

TEST(SafetensorsTest, ParsesHandWrittenHeaderWithGapAndTrailingSpaces) {
  const std::string header =
      R"({"b":{"dtype":"F32","shape":[2],"data_offsets":[16,24]},"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}   )";
  auto file = ParseImage(Image(header, 24));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->tensors().size(), 2u);
  EXPECT_EQ((*file)->Find("b")->nbytes, 8u);
}

TEST(SafetensorsTest, FuzzSeedFilesParse) {
  const std::string dir = std::string(K3_SOURCE_DIR) + "/fuzz/corpus/fuzz_safetensors_header";
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    auto file = SafetensorsFile::Open(entry.path().string());
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    ++count;
  }
  EXPECT_GE(count, 3);
}

TEST(SafetensorsErrorTest, FileShorterThanLengthField) {
  const std::vector<uint8_t> bytes = {1, 2, 3};
  ExpectError(ParseImage(bytes), StatusCode::kDataLoss, {"3 bytes", "8-byte header length"});
  ExpectError(SafetensorsFile::Parse(nullptr, 0, "shard.safetensors"), StatusCode::kDataLoss, {"0 bytes"});
}

TEST(SafetensorsErrorTest, HeaderLengthPastEof) {
  ExpectError(ParseImage(Image("{}", 0, 3)), StatusCode::kDataLoss,
              {"header length 3", "past the end", "10-byte"});
  ExpectError(ParseImage(Image("{}", 0, int64_t{1} << 62)), StatusCode::kDataLoss, {"limit"});
  ExpectError(ParseImage(Image("{}", 0, (100 << 20) + 1)), StatusCode::kDataLoss, {"104857601", "limit"});
}

TEST(SafetensorsErrorTest, HeaderNotJsonObject) {
  ExpectError(ParseImage(Image("{\"a\": ", 0)), StatusCode::kDataLoss, {"not valid JSON"});
  ExpectError(ParseImage(Image("[1,2]", 0)), StatusCode::kDataLoss, {"array, expected an object"});
  ExpectError(ParseImage(Image("\xff\xfe", 0)), StatusCode::kDataLoss, {"not valid JSON"});
  ExpectError(ParseImage(Image(R"({"a":"\ud800"})", 0)), StatusCode::kDataLoss, {"not valid JSON"});
}

TEST(SafetensorsErrorTest, EntryNotObjectOrMissingFields) {
  ExpectError(ParseImage(Image(R"({"w": 5})", 0)), StatusCode::kDataLoss,
              {"tensor 'w'", "expected an object"});
  ExpectError(ParseImage(Image(R"({"w": {"shape":[1],"data_offsets":[0,1]}})", 1)), StatusCode::kDataLoss,
              {"tensor 'w'", "dtype"});
  ExpectError(ParseImage(Image(R"({"w": {"dtype":"U8","data_offsets":[0,1]}})", 1)), StatusCode::kDataLoss,
              {"tensor 'w'", "shape"});
  ExpectError(ParseImage(Image(R"({"w": {"dtype":"U8","shape":[1]}})", 1)), StatusCode::kDataLoss,
              {"tensor 'w'", "data_offsets (missing)"});
}

TEST(SafetensorsErrorTest, UnknownDType) {
  ExpectError(ParseImage(Image(R"({"w": {"dtype":"Q4_K","shape":[1],"data_offsets":[0,1]}})", 1)),
              StatusCode::kDataLoss, {"tensor 'w'", "unknown dtype \"Q4_K\""});
  ExpectError(ParseImage(Image(R"({"w": {"dtype":7,"shape":[1],"data_offsets":[0,1]}})", 1)),
              StatusCode::kDataLoss, {"tensor 'w'", "dtype"});
  ExpectError(ParseImage(Image(R"({"w": {"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})", 1)),
              StatusCode::kUnimplemented, {"tensor 'w'", "F8_E4M3", "does not support"});
}

TEST(SafetensorsErrorTest, BadShapes) {
  for (const char* shape : {"[-1]", "[1.5]", "[\"2\"]", "3", "[null]"}) {
    const std::string header =
        fmt::format(R"({{"w": {{"dtype":"U8","shape":{},"data_offsets":[0,1]}}}})", shape);
    ExpectError(ParseImage(Image(header, 1)), StatusCode::kDataLoss, {"tensor 'w'", "shape"});
  }
  ExpectError(
      ParseImage(Image(R"({"w": {"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,1]}})", 1)),
      StatusCode::kDataLoss, {"tensor 'w'", "overflows"});
  ExpectError(
      ParseImage(Image(R"({"w": {"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,1]}})", 1)),
      StatusCode::kDataLoss, {"tensor 'w'", "overflows"});
}

TEST(SafetensorsErrorTest, BadOffsets) {
  for (const char* offsets : {"[0]", "[0,1,2]", "[-1,0]", "[1,0]", "[0.0,1]", "\"0,1\""}) {
    const std::string header =
        fmt::format(R"({{"w": {{"dtype":"U8","shape":[1],"data_offsets":{}}}}})", offsets);
    ExpectError(ParseImage(Image(header, 4)), StatusCode::kDataLoss, {"tensor 'w'", "data_offsets"});
  }
}

TEST(SafetensorsErrorTest, ByteLengthDoesNotMatchShape) {
  ExpectError(ParseImage(Image(R"({"w": {"dtype":"BF16","shape":[2,3],"data_offsets":[0,10]}})", 16)),
              StatusCode::kDataLoss, {"tensor 'w'", "(10 bytes)", "BF16", "needs 12 bytes"});
}

TEST(SafetensorsErrorTest, OffsetsOutOfRange) {
  ExpectError(ParseImage(Image(R"({"w": {"dtype":"F32","shape":[4],"data_offsets":[8,24]}})", 20)),
              StatusCode::kDataLoss, {"tensor 'w'", "[8, 24]", "past the end of the data area (20 bytes)"});
  ExpectError(
      ParseImage(Image(
          R"({"w": {"dtype":"U8","shape":[0],"data_offsets":[18446744073709551615,18446744073709551615]}})",
          4)),
      StatusCode::kDataLoss, {"tensor 'w'", "past the end"});
}

TEST(SafetensorsErrorTest, OverlappingOffsets) {
  const std::string header =
      R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"U8","shape":[8],"data_offsets":[12,20]}})";
  ExpectError(ParseImage(Image(header, 32)), StatusCode::kDataLoss, {"tensor 'b'", "overlaps tensor 'a'"});
  // One range inside another, sorted after a shorter one with the same begin.
  const std::string nested =
      R"({"a":{"dtype":"U8","shape":[32],"data_offsets":[0,32]},"b":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
      R"("c":{"dtype":"U8","shape":[4],"data_offsets":[8,12]},"e":{"dtype":"U8","shape":[0],"data_offsets":[8,8]}})";
  ExpectError(ParseImage(Image(nested, 32)), StatusCode::kDataLoss, {"overlaps"});
}

TEST(SafetensorsErrorTest, DuplicateNames) {
  const std::string header =
      R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"w":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})";
  ExpectError(ParseImage(Image(header, 2)), StatusCode::kDataLoss, {"tensor 'w' twice"});
}

TEST(SafetensorsErrorTest, BadMetadata) {
  ExpectError(ParseImage(Image(R"({"__metadata__": [1]})", 0)), StatusCode::kDataLoss,
              {"__metadata__", "array"});
  ExpectError(ParseImage(Image(R"({"__metadata__": {"format": 1}})", 0)), StatusCode::kDataLoss,
              {"__metadata__", "'format'", "expected a string"});
}

TEST(SafetensorsErrorTest, TruncatedFileOnDisk) {
  const std::string dir = TestDir("truncated");
  const std::string path = dir + "/model.safetensors";
  ASSERT_TRUE(WriteSafetensors(path, {MakeTensor("big", DType::kF32, {64, 64}, 3)}).ok());
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 100);
  auto file = SafetensorsFile::Open(path);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(file.status().message(), HasSubstr(path));
  EXPECT_THAT(file.status().message(), HasSubstr("tensor 'big'"));
  EXPECT_THAT(file.status().message(), HasSubstr("past the end of the data area"));

  std::filesystem::resize_file(path, 30);  // inside the header
  file = SafetensorsFile::Open(path);
  ASSERT_FALSE(file.ok());
  EXPECT_THAT(file.status().message(), HasSubstr("past the end of the 30-byte file"));

  auto missing = SafetensorsFile::Open(dir + "/none.safetensors");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace k3::io
