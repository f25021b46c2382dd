// AzureStore against a real azurite (started by the test; it re-computes every Shared Key signature and
// checks SAS tokens), with a fault proxy in between for the retry cases. Skipped, with the reason, when
// node or the pinned npm package is absent.
#include "src/storage/azure_store.h"

#include <gtest/gtest.h>

#include <chrono>

#include "src/storage/azure_shared_key.h"
#include "src/storage/percent_encoding.h"
#include "src/storage/testing/azurite_process.h"
#include "src/storage/testing/fault_proxy.h"

namespace k3::storage {
namespace {

using testing::AzuriteProcess;
using testing::FaultProxy;

constexpr const char* kContainer = "k3-test";

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

// An account SAS for the dev account (blob service; service, container and object resources), signed as
// "Create an account SAS" documents it for signed version 2019-12-12: account, permissions, services,
// resource types, start, expiry, IP, protocol, version, each followed by '\n'.
std::string AccountSas(const std::string& permissions, const std::string& key) {
  const std::string version = "2019-12-12", expiry = "2099-01-01T00:00:00Z";
  const std::string string_to_sign =
      std::string(kAzuriteAccount) + "\n" + permissions + "\nb\nsco\n\n" + expiry + "\n\n\n" + version + "\n";
  return "sv=" + version + "&ss=b&srt=sco&sp=" + permissions + "&se=" + PercentEncode(expiry, false) +
         "&sig=" + PercentEncode(HmacSha256Base64(key, string_to_sign), false);
}

class AzureStoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (std::string why = AzuriteProcess::Unavailable(); !why.empty()) {
      skip_reason_ = new std::string(why);
      return;
    }
    auto server = AzuriteProcess::Start();
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
    auto container = MakeStore("", server_->endpoint());
    ASSERT_TRUE(container->CreateContainer().ok());
  }

  // A store on az://devstoreaccount1/k3-test/<prefix> through `endpoint` (the server, or a proxy).
  std::unique_ptr<AzureStore> MakeStore(const std::string& prefix, const std::string& endpoint,
                                        AzureOptions options = {}) {
    if (!options.access) options.access = AzuriteProcess::SharedKeyAccess(endpoint);
    options.access->endpoint = endpoint;
    options.retry.base_delay = std::chrono::milliseconds(5);
    options.retry.max_delay = std::chrono::milliseconds(50);
    options.connect_timeout_s = 5;
    options.low_speed_time_s = 5;
    auto uri = ParseObjectUri("az://" + std::string(kAzuriteAccount) + "/" + kContainer + "/" + prefix);
    EXPECT_TRUE(uri.ok());
    auto store = AzureStore::Create(*uri, options);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return std::move(store).value();
  }

  static AzuriteProcess* server_;
  static std::string* skip_reason_;
};
AzuriteProcess* AzureStoreTest::server_ = nullptr;
std::string* AzureStoreTest::skip_reason_ = nullptr;

TEST_F(AzureStoreTest, WriteListStatReadRoundTrip) {
  AzureOptions options;
  options.list_page_size = 2;  // five blobs: three List Blobs pages
  auto store = MakeStore("round/trip", server_->endpoint(), options);
  const std::string big = Pattern(100000, 1);
  ASSERT_TRUE(store->WriteAll("config.json", Bytes("{\"a\": 1}")).ok());
  const Status spaced = store->WriteAll("dir/with space+plus&amp.bin", Bytes(big));
  ASSERT_TRUE(spaced.ok()) << spaced.ToString();
  ASSERT_TRUE(store->WriteAll("dir/b", Bytes("b")).ok());
  ASSERT_TRUE(store->WriteAll("dir/c", Bytes("")).ok());
  ASSERT_TRUE(store->WriteAll("z", Bytes("zz")).ok());

  auto list = store->List("");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  std::vector<std::string> keys;
  for (const ObjectInfo& info : *list) keys.push_back(info.key);
  EXPECT_EQ(keys,
            (std::vector<std::string>{"config.json", "dir/b", "dir/c", "dir/with space+plus&amp.bin", "z"}));
  EXPECT_EQ((*list)[3].size, big.size());
  EXPECT_FALSE((*list)[3].etag.empty());
  EXPECT_EQ((*list)[2].size, 0u);
  EXPECT_EQ(store->List("dir/")->size(), 3u);

  auto stat = store->Stat("dir/with space+plus&amp.bin");
  ASSERT_TRUE(stat.ok()) << stat.status().ToString();
  EXPECT_EQ(stat->size, big.size());
  EXPECT_EQ(stat->etag, (*list)[3].etag) << "List Blobs and Get Blob Properties agree on the ETag";
  auto missing = store->Stat("nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound) << missing.status().ToString();
  EXPECT_NE(missing.status().message().find("az://devstoreaccount1/k3-test/round/trip/nope"),
            std::string::npos)
      << missing.status().message();

  std::vector<uint8_t> range(1000);
  ASSERT_TRUE(store->ReadRange("dir/with space+plus&amp.bin", 54321, range).ok());
  EXPECT_EQ(std::string(range.begin(), range.end()), big.substr(54321, 1000));
  EXPECT_EQ(*store->ReadAll("config.json"), "{\"a\": 1}");
  std::vector<uint8_t> past(10);
  EXPECT_FALSE(store->ReadRange("z", 5, past).ok());

  ASSERT_TRUE(store->Delete("z").ok());
  EXPECT_EQ(store->Stat("z").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store->Delete("z").ok()) << "deleting a missing blob is fine";
}

TEST_F(AzureStoreTest, BlockUploadIsInvisibleUntilCommitAndResumesFromUncommittedBlocks) {
  AzureOptions options;
  options.block_size = 64 << 10;
  auto store = MakeStore("blocks", server_->endpoint(), options);
  const std::string data = Pattern(300000, 2);  // 4 full blocks + a 37,856-byte last block
  {
    auto writer = store->OpenWriter("shard.bin", WriteOptions{data.size(), true});
    ASSERT_TRUE(writer.ok()) << writer.status().ToString();
    EXPECT_EQ((*writer)->resume_offset(), 0u);
    ASSERT_TRUE((*writer)->Append(Bytes(data.substr(0, 150000))).ok());  // blocks 0 and 1 go up
    // Dropped without Commit (a killed sync).
  }
  EXPECT_EQ(store->Stat("shard.bin").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store->List("")->empty()) << "uncommitted blocks are not listed";

  {  // Another object size does not take over these blocks.
    auto other = store->OpenWriter("shard.bin", WriteOptions{data.size() + 1, true});
    ASSERT_TRUE(other.ok());
    EXPECT_EQ((*other)->resume_offset(), 0u);
  }
  auto writer = store->OpenWriter("shard.bin", WriteOptions{data.size(), true});
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  const uint64_t resume = (*writer)->resume_offset();
  EXPECT_EQ(resume, 2u * (64 << 10));
  for (size_t offset = resume; offset < data.size(); offset += 7777) {
    ASSERT_TRUE((*writer)->Append(Bytes(data.substr(offset, 7777))).ok());
  }
  const Status committed = (*writer)->Commit();
  ASSERT_TRUE(committed.ok()) << committed.ToString();
  EXPECT_EQ(*store->ReadAll("shard.bin"), data);
  auto list = store->List("");
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].size, data.size());

  // A fresh (non-resuming) rewrite of the same key with other bytes replaces it whole.
  const std::string second = Pattern(200000, 3);
  ASSERT_TRUE(store->WriteAll("shard.bin", Bytes(second)).ok());
  EXPECT_EQ(*store->ReadAll("shard.bin"), second);
}

TEST_F(AzureStoreTest, WrongKeyGivesOneLineNamingAccountAndSourceWithoutTheSecret) {
  const std::string secret = Base64Encode("not-the-secret-Zq9xW-0123456789abcdef");
  AzureOptions options;
  options.access = AzuriteProcess::SharedKeyAccess(server_->endpoint());
  options.access->credentials.decoded_key = "not-the-secret-Zq9xW-0123456789abcdef";
  options.access->credentials.source = "env AZURE_STORAGE_KEY";
  auto store = MakeStore("x", server_->endpoint(), options);
  auto list = store->List("");
  ASSERT_FALSE(list.ok());
  const std::string& message = list.status().message();
  EXPECT_NE(message.find("az://devstoreaccount1/k3-test"), std::string::npos) << message;
  EXPECT_NE(message.find("403"), std::string::npos) << message;
  // Azure answers AuthenticationFailed, azurite 3.35 AuthorizationFailure.
  EXPECT_TRUE(message.find("AuthenticationFailed") != std::string::npos ||
              message.find("AuthorizationFailure") != std::string::npos)
      << message;
  EXPECT_NE(message.find("env AZURE_STORAGE_KEY"), std::string::npos) << message;
  EXPECT_EQ(message.find(secret), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_EQ(message.find("gave up"), std::string::npos) << "a 403 is not retried: " << message;
}

TEST_F(AzureStoreTest, AMissingContainerIsNamedWithHowToCreateIt) {
  auto uri = ParseObjectUri("az://" + std::string(kAzuriteAccount) + "/no-such-container/p");
  AzureOptions options;
  options.access = AzuriteProcess::SharedKeyAccess(server_->endpoint());
  auto store = AzureStore::Create(*uri, options);
  ASSERT_TRUE(store.ok());
  const Status written = (*store)->WriteAll("x", Bytes("x"));
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.message().find("az://devstoreaccount1/no-such-container/p/x: HTTP 404 ContainerNotFound"),
            std::string::npos)
      << written.message();
  EXPECT_NE(written.message().find("az storage container create --account-name devstoreaccount1 --name "
                                   "no-such-container"),
            std::string::npos)
      << written.message();
  auto list = (*store)->List("");
  EXPECT_EQ(list.status().code(), StatusCode::kNotFound) << list.status().ToString();
}

TEST_F(AzureStoreTest, SasTokenReadsAndWritesAndAForgedOneIsRefusedWithoutPrintingIt) {
  const std::string key = Base64Decode(kAzuriteAccountKey).value();
  AzureOptions options;
  options.access = AzureAccess{server_->endpoint(), {}};
  options.access->credentials.kind = AzureAuthKind::kSas;
  options.access->credentials.sas_token = AccountSas("rwdlac", key);
  options.access->credentials.source = "env AZURE_STORAGE_SAS_TOKEN";
  auto store = MakeStore("sas", server_->endpoint(), options);
  const std::string data = Pattern(5000, 4);
  const Status written = store->WriteAll("obj", Bytes(data));
  ASSERT_TRUE(written.ok()) << written.ToString();
  auto got = store->ReadAll("obj");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, data);
  ASSERT_EQ(store->List("")->size(), 1u);

  // Signed with another key: azurite refuses it; the token's signature is not in the message.
  options.access->credentials.sas_token = AccountSas("rl", "another key");
  auto forged = MakeStore("sas", server_->endpoint(), options);
  auto list = forged->List("");
  ASSERT_FALSE(list.ok());
  const std::string& message = list.status().message();
  EXPECT_NE(message.find("403"), std::string::npos) << message;
  EXPECT_NE(message.find("env AZURE_STORAGE_SAS_TOKEN"), std::string::npos) << message;
  const std::string& token = options.access->credentials.sas_token;
  EXPECT_EQ(message.find(token.substr(token.find("sig=") + 4)), std::string::npos) << message;
}

TEST_F(AzureStoreTest, ServerBusyIsRetriedWithBackoff) {
  auto proxy = FaultProxy::Start(server_->port());
  ASSERT_TRUE(proxy.ok());
  auto direct = MakeStore("busy", server_->endpoint());
  const std::string data = Pattern(5000, 5);
  ASSERT_TRUE(direct->WriteAll("obj", Bytes(data)).ok());

  AzureOptions options;
  options.retry.max_attempts = 5;
  auto store = MakeStore("busy", (*proxy)->endpoint() + "/" + std::string(kAzuriteAccount), options);
  (*proxy)->FailNextConnections(3);
  auto got = store->ReadAll("obj");  // the Get Blob Properties takes the three 503s, then succeeds
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, data);
  EXPECT_EQ((*proxy)->failed(), 3);
}

TEST_F(AzureStoreTest, EndlessServerBusyGivesUpAfterTheBoundWithAClearError) {
  auto proxy = FaultProxy::Start(server_->port());
  ASSERT_TRUE(proxy.ok());
  AzureOptions options;
  options.retry.max_attempts = 4;
  auto store = MakeStore("busy", (*proxy)->endpoint() + "/" + std::string(kAzuriteAccount), options);
  (*proxy)->FailNextConnections(1000);
  const auto start = std::chrono::steady_clock::now();
  auto stat = store->Stat("obj");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(stat.ok());
  const std::string& message = stat.status().message();
  EXPECT_NE(message.find("az://devstoreaccount1/k3-test/busy/obj"), std::string::npos) << message;
  EXPECT_NE(message.find("503"), std::string::npos) << message;
  EXPECT_NE(message.find("gave up after 4 attempts"), std::string::npos) << message;
  EXPECT_NE(message.find("azurite dev account key"), std::string::npos) << message;
  EXPECT_EQ((*proxy)->failed(), 4);
  EXPECT_LT(seconds, 5.0);
}

TEST_F(AzureStoreTest, ConnectionDroppedMidBodyIsResumedAndIdentical) {
  auto proxy = FaultProxy::Start(server_->port());
  ASSERT_TRUE(proxy.ok());
  auto direct = MakeStore("drop", server_->endpoint());
  const std::string data = Pattern(1 << 20, 6);
  ASSERT_TRUE(direct->WriteAll("big", Bytes(data)).ok());

  auto store = MakeStore("drop", (*proxy)->endpoint() + "/" + std::string(kAzuriteAccount));
  (*proxy)->DropNextConnectionAfter(300000);
  std::vector<uint8_t> got(data.size());
  Status status = store->ReadRange("big", 0, got);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ((*proxy)->dropped(), 1);
  EXPECT_TRUE(std::string(got.begin(), got.end()) == data) << "the bytes differ after the retry";
}

}  // namespace
}  // namespace k3::storage
