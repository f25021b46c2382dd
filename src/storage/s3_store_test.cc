// S3Store against a real s3rver (started by the test, checking SigV4 signatures), with a fault proxy in
// between for the retry cases. Skipped, with the reason, when node or the pinned npm package is absent.
#include "src/storage/s3_store.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>

#include "src/storage/open_store.h"
#include "src/storage/testing/fake_env.h"
#include "src/storage/testing/fault_proxy.h"
#include "src/storage/testing/s3rver_process.h"

namespace k3::storage {
namespace {

using testing::FaultProxy;
using testing::S3rverProcess;

constexpr const char* kBucket = "k3-test";

std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string Pattern(size_t size, uint32_t seed) {
  std::string out(size, '\0');
  uint32_t x = seed;
  for (char& c : out) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return out;
}

class S3StoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (std::string why = S3rverProcess::Unavailable(); !why.empty()) {
      skip_reason_ = new std::string(why);
      return;
    }
    auto server = S3rverProcess::Start({kBucket});
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = server->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (skip_reason_ != nullptr) GTEST_SKIP() << *skip_reason_;
    ASSERT_NE(server_, nullptr);
  }

  // A store on s3://k3-test/<prefix> through `endpoint` (the server, or a proxy in front of it).
  std::unique_ptr<S3Store> MakeStore(const std::string& prefix, const std::string& endpoint,
                                     S3Options options = {}) {
    options.endpoint = endpoint;
    if (!options.credentials) options.credentials = S3rverProcess::Credentials();
    options.retry.base_delay = std::chrono::milliseconds(5);
    options.retry.max_delay = std::chrono::milliseconds(50);
    options.connect_timeout_s = 5;
    options.low_speed_time_s = 5;
    auto uri = ParseObjectUri(std::string("s3://") + kBucket + "/" + prefix);
    EXPECT_TRUE(uri.ok());
    auto store = S3Store::Create(*uri, options);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return std::move(store).value();
  }

  static S3rverProcess* server_;
  static std::string* skip_reason_;
};
S3rverProcess* S3StoreTest::server_ = nullptr;
std::string* S3StoreTest::skip_reason_ = nullptr;

TEST_F(S3StoreTest, WriteListStatReadRoundTrip) {
  S3Options options;
  options.list_page_size = 2;  // five objects: three ListObjectsV2 pages
  auto store = MakeStore("round/trip", server_->endpoint(), options);
  const std::string big = Pattern(100000, 1);
  ASSERT_TRUE(store->WriteAll("config.json", Bytes("{\"a\": 1}")).ok());
  ASSERT_TRUE(store->WriteAll("dir/with space+plus.bin", Bytes(big)).ok());
  ASSERT_TRUE(store->WriteAll("dir/b", Bytes("b")).ok());
  ASSERT_TRUE(store->WriteAll("dir/c", Bytes("")).ok());
  ASSERT_TRUE(store->WriteAll("z", Bytes("zz")).ok());

  auto list = store->List("");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  std::vector<std::string> keys;
  for (const ObjectInfo& info : *list) keys.push_back(info.key);
  EXPECT_EQ(keys,
            (std::vector<std::string>{"config.json", "dir/b", "dir/c", "dir/with space+plus.bin", "z"}));
  EXPECT_EQ((*list)[3].size, big.size());
  EXPECT_EQ((*list)[3].etag.size(), 32u) << "s3rver's ETag is the MD5 of a single-PUT object";
  EXPECT_EQ(store->List("dir/")->size(), 3u);

  auto stat = store->Stat("dir/with space+plus.bin");
  ASSERT_TRUE(stat.ok()) << stat.status().ToString();
  EXPECT_EQ(stat->size, big.size());
  EXPECT_EQ(stat->etag, (*list)[3].etag);
  auto missing = store->Stat("nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound) << missing.status().ToString();

  std::vector<uint8_t> range(1000);
  ASSERT_TRUE(store->ReadRange("dir/with space+plus.bin", 54321, range).ok());
  EXPECT_EQ(std::string(range.begin(), range.end()), big.substr(54321, 1000));
  EXPECT_EQ(*store->ReadAll("config.json"), "{\"a\": 1}");
  std::vector<uint8_t> past(10);
  EXPECT_FALSE(store->ReadRange("z", 5, past).ok());

  ASSERT_TRUE(store->Delete("z").ok());
  EXPECT_EQ(store->Stat("z").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store->Delete("z").ok()) << "deleting a missing object is fine";
}

TEST_F(S3StoreTest, MultipartUploadIsInvisibleUntilCommitAndResumes) {
  S3Options options;
  options.part_size = 64 << 10;
  auto store = MakeStore("multipart", server_->endpoint(), options);
  const std::string data = Pattern(300000, 2);  // 4 full parts + a 37,856-byte last part
  {
    auto writer = store->OpenWriter("shard.bin", WriteOptions{data.size(), true});
    ASSERT_TRUE(writer.ok());
    EXPECT_EQ((*writer)->resume_offset(), 0u);
    ASSERT_TRUE((*writer)->Append(Bytes(data.substr(0, 150000))).ok());  // parts 1 and 2 go up
    // Dropped without Commit (a killed sync).
  }
  EXPECT_EQ(store->Stat("shard.bin").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store->List("")->empty()) << "neither the object nor its journal is listed";

  auto writer = store->OpenWriter("shard.bin", WriteOptions{data.size(), true});
  ASSERT_TRUE(writer.ok());
  const uint64_t resume = (*writer)->resume_offset();
  EXPECT_EQ(resume, 2u * (64 << 10));
  for (size_t offset = resume; offset < data.size(); offset += 7777) {
    ASSERT_TRUE((*writer)->Append(Bytes(data.substr(offset, 7777))).ok());
  }
  ASSERT_TRUE((*writer)->Commit().ok());
  EXPECT_EQ(*store->ReadAll("shard.bin"), data);
  auto list = store->List("");
  ASSERT_EQ(list->size(), 1u) << "the journal is gone after Commit";
  EXPECT_EQ((*list)[0].size, data.size());
}

// s3rver 3.7.1 checks the access key id but not the V4 signature itself (its SigV4 check is
// unimplemented), so the wrong credentials here are a wrong key id; the signature is checked by
// storage_s3_offline_test (sigv4_test.cc) against AWS's published example.
TEST_F(S3StoreTest, WrongCredentialsGiveOneLineNamingBucketAndSourceWithoutTheSecret) {
  const std::string secret = "not-the-secret-Zq9xW";
  S3Options options;
  options.credentials = AwsCredentials{"AKIDWRONG", secret, "", "env AWS_ACCESS_KEY_ID"};
  auto store = MakeStore("x", server_->endpoint(), options);
  auto list = store->List("");
  ASSERT_FALSE(list.ok());
  const std::string& message = list.status().message();
  EXPECT_NE(message.find("s3://k3-test"), std::string::npos) << message;
  EXPECT_NE(message.find("403"), std::string::npos) << message;
  EXPECT_NE(message.find("InvalidAccessKeyId"), std::string::npos) << message;
  EXPECT_NE(message.find("env AWS_ACCESS_KEY_ID"), std::string::npos) << message;
  EXPECT_EQ(message.find(secret), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_EQ(message.find("gave up"), std::string::npos) << "a 403 is not retried: " << message;
}

TEST_F(S3StoreTest, SlowDownIsRetriedWithBackoff) {
  auto proxy = FaultProxy::Start(server_->port());
  ASSERT_TRUE(proxy.ok());
  auto direct = MakeStore("slowdown", server_->endpoint());
  const std::string data = Pattern(5000, 3);
  ASSERT_TRUE(direct->WriteAll("obj", Bytes(data)).ok());

  S3Options options;
  options.retry.max_attempts = 5;
  auto store = MakeStore("slowdown", (*proxy)->endpoint(), options);
  (*proxy)->FailNextConnections(3);
  auto got = store->ReadAll("obj");  // the Stat takes the three 503s, then succeeds
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, data);
  EXPECT_EQ((*proxy)->failed(), 3);
}

TEST_F(S3StoreTest, EndlessSlowDownGivesUpAfterTheBoundWithAClearError) {
  auto proxy = FaultProxy::Start(server_->port());
  ASSERT_TRUE(proxy.ok());
  S3Options options;
  options.retry.max_attempts = 4;
  auto store = MakeStore("slowdown", (*proxy)->endpoint(), options);
  (*proxy)->FailNextConnections(1000);
  const auto start = std::chrono::steady_clock::now();
  auto stat = store->Stat("obj");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(stat.ok());
  const std::string& message = stat.status().message();
  EXPECT_NE(message.find("s3://k3-test/slowdown/obj"), std::string::npos) << message;
  EXPECT_NE(message.find("503"), std::string::npos) << message;
  EXPECT_NE(message.find("gave up after 4 attempts"), std::string::npos) << message;
  EXPECT_EQ((*proxy)->failed(), 4);
  EXPECT_LT(seconds, 5.0);
}

TEST_F(S3StoreTest, ConnectionDroppedMidBodyIsResumedAndIdentical) {
  auto proxy = FaultProxy::Start(server_->port());
  ASSERT_TRUE(proxy.ok());
  auto direct = MakeStore("drop", server_->endpoint());
  const std::string data = Pattern(1 << 20, 4);
  ASSERT_TRUE(direct->WriteAll("big", Bytes(data)).ok());

  auto store = MakeStore("drop", (*proxy)->endpoint());
  (*proxy)->DropNextConnectionAfter(300000);
  std::vector<uint8_t> got(data.size());
  Status status = store->ReadRange("big", 0, got);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ((*proxy)->dropped(), 1);
  EXPECT_TRUE(std::string(got.begin(), got.end()) == data) << "the bytes differ after the retry";
}

// gs:// and oss:// go through S3Store with their own environment (s3_compatible.h); s3rver checks their
// SigV4 signatures (region "auto" for GCS, the OSS region ID). No AWS_* variable is set.
void RoundTripThroughScheme(const std::string& uri_text, const EnvLookup& env, const EnvLookup& wrong_env,
                            const std::string& credential_source) {
  auto uri = ParseObjectUri(uri_text);
  ASSERT_TRUE(uri.ok());
  auto store = OpenObjectStore(*uri, {}, env);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const std::string data = Pattern(70000, 7);
  ASSERT_TRUE((*store)->WriteAll("dir/shard.bin", Bytes(data)).ok());
  ASSERT_TRUE((*store)->WriteAll("config.json", Bytes("{}")).ok());
  auto list = (*store)->List("");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[1].key, "dir/shard.bin");
  EXPECT_EQ((*list)[1].size, data.size());
  std::vector<uint8_t> range(500);
  ASSERT_TRUE((*store)->ReadRange("dir/shard.bin", 1234, range).ok());
  EXPECT_EQ(std::string(range.begin(), range.end()), data.substr(1234, 500));

  // A wrong key id (s3rver checks ids, not V4 signatures; sigv4_test checks those): one line naming the
  // object and the credential source, never the secret.
  auto wrong = OpenObjectStore(*uri, {}, wrong_env);
  ASSERT_TRUE(wrong.ok()) << wrong.status().ToString();
  auto stat = (*wrong)->Stat("config.json");
  ASSERT_FALSE(stat.ok());
  const std::string& message = stat.status().message();
  EXPECT_NE(message.find(uri_text + "/config.json"), std::string::npos) << message;
  EXPECT_NE(message.find("403"), std::string::npos) << message;
  EXPECT_NE(message.find(credential_source), std::string::npos) << message;
  EXPECT_EQ(message.find("not-the-secret"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST_F(S3StoreTest, GsSchemeWithHmacKeysAndAnEndpointOverride) {
  std::map<std::string, std::string> vars = {{"K3_GCS_ENDPOINT", server_->endpoint()},
                                             {"GCS_HMAC_ACCESS_KEY_ID", "S3RVER"},
                                             {"GCS_HMAC_SECRET", "S3RVER"}};
  auto wrong = vars;
  wrong["GCS_HMAC_ACCESS_KEY_ID"] = "WRONGID";
  wrong["GCS_HMAC_SECRET"] = "not-the-secret";
  RoundTripThroughScheme(std::string("gs://") + kBucket + "/gcs", testing::FakeEnv(vars),
                         testing::FakeEnv(wrong), "env GCS_HMAC_ACCESS_KEY_ID");
}

TEST_F(S3StoreTest, OssSchemeWithKeysAndAnEndpointOverride) {
  std::map<std::string, std::string> vars = {{"OSS_ENDPOINT", server_->endpoint()},
                                             {"OSS_REGION", "cn-hangzhou"},
                                             {"K3_OSS_PATH_STYLE", "1"},
                                             {"OSS_ACCESS_KEY_ID", "S3RVER"},
                                             {"OSS_ACCESS_KEY_SECRET", "S3RVER"}};
  auto wrong = vars;
  wrong["OSS_ACCESS_KEY_ID"] = "WRONGID";
  wrong["OSS_ACCESS_KEY_SECRET"] = "not-the-secret";
  RoundTripThroughScheme(std::string("oss://") + kBucket + "/oss", testing::FakeEnv(vars),
                         testing::FakeEnv(wrong), "env OSS_ACCESS_KEY_ID");
}

}  // namespace
}  // namespace k3::storage
