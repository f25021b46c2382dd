// The Hugging Face Hub store (hf_store.h, hf_tree.h) without a Hub: the tree-page parser and the Link
// header, the settings from the environment, and HfStore against canned loopback replies (a 401, a
// listing, writes refused). The whole path through a fake Hub with redirects is tests/storage/hf_cli_test.sh.
#include "src/storage/hf_store.h"

#include <gtest/gtest.h>

#include "src/storage/hf_tree.h"
#include "src/storage/testing/canned_http_server.h"
#include "src/storage/testing/fake_env.h"

namespace k3::storage {
namespace {

using testing::CannedHttpServer;
using testing::FakeEnv;

TEST(HfTreeTest, FilesWithLfsSizesAndDirectoriesSkipped) {
  auto page = ParseHfTreePage(R"([
    {"type": "directory", "oid": "4b8c", "path": "sub", "size": 0},
    {"type": "file", "oid": "9d2e", "path": "config.json", "size": 612},
    {"type": "file", "oid": "a1b2", "path": "sub/model.safetensors", "size": 135,
     "lfs": {"oid": "3f5a", "size": 4901232, "pointerSize": 135}}])",
                              "listing");
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->size(), 2u);
  EXPECT_EQ((*page)[0].path, "config.json");
  EXPECT_EQ((*page)[0].size, 612u);
  EXPECT_EQ((*page)[0].oid, "9d2e");
  EXPECT_EQ((*page)[1].path, "sub/model.safetensors");
  EXPECT_EQ((*page)[1].size, 4901232u);
  EXPECT_EQ((*page)[1].oid, "3f5a");
  EXPECT_TRUE(ParseHfTreePage("[]", "listing")->empty());
}

TEST(HfTreeTest, MalformedPagesAreDataLossNamingTheListing) {
  for (const char* bad :
       {"", "{}", "[1]", R"([{"type": "file"}])", R"([{"type": "file", "path": "a"}])",
        R"([{"type": "file", "path": "a", "size": -1}])", R"([{"type": "file", "path": "", "size": 1}])",
        R"([{"type": "file", "path": "a", "size": 1, "lfs": {"size": "big"}}])"}) {
    auto page = ParseHfTreePage(bad, "listing of hf://o/r");
    ASSERT_FALSE(page.ok()) << bad;
    EXPECT_EQ(page.status().code(), StatusCode::kDataLoss) << bad;
    EXPECT_NE(page.status().message().find("listing of hf://o/r"), std::string::npos);
  }
}

TEST(HfTreeTest, NextLinkUrl) {
  EXPECT_EQ(NextLinkUrl(R"(<https://huggingface.co/api/models/o/r/tree/main?cursor=x>; rel="next")"),
            "https://huggingface.co/api/models/o/r/tree/main?cursor=x");
  EXPECT_EQ(NextLinkUrl(R"(<https://h/first>; rel="prev", <https://h/n?a=1,2>; rel="next")"),
            "https://h/n?a=1,2");
  EXPECT_EQ(NextLinkUrl(R"(<https://h/last>; rel="last")"), "");
  EXPECT_EQ(NextLinkUrl(""), "");
  EXPECT_EQ(NextLinkUrl("<unterminated; rel=\"next\""), "");
}

TEST(HfOptionsTest, EndpointAndTokenFromTheEnvironment) {
  HfOptions defaults = HfOptionsFromEnvironment(FakeEnv({}));
  EXPECT_EQ(defaults.endpoint, "https://huggingface.co");
  EXPECT_TRUE(defaults.token.empty());
  EXPECT_EQ(defaults.token_source, "no token");
  HfOptions set = HfOptionsFromEnvironment(FakeEnv(
      {{"HF_ENDPOINT", "http://127.0.0.1:9/"}, {"HUGGING_FACE_HUB_TOKEN", "old"}, {"HF_TOKEN", "new"}}));
  EXPECT_EQ(set.endpoint, "http://127.0.0.1:9");
  EXPECT_EQ(set.token, "new");
  EXPECT_EQ(set.token_source, "env HF_TOKEN");
}

std::unique_ptr<HfStore> MakeStore(const std::string& uri_text, const std::string& endpoint,
                                   const std::string& token) {
  auto uri = ParseObjectUri(uri_text);
  EXPECT_TRUE(uri.ok());
  HfOptions options;
  options.endpoint = endpoint;
  options.token = token;
  options.token_source = token.empty() ? "no token" : "env HF_TOKEN";
  auto store = HfStore::Create(*uri, options);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return std::move(store).value();
}

TEST(HfStoreTest, ListsBelowTheUrisDirectoryWithTheTokenAndRevision) {
  CannedHttpServer hub({{200, R"([{"type": "file", "oid": "1", "path": "dir/a.json", "size": 3},
                                  {"type": "file", "oid": "2", "path": "dir/b/c.bin", "size": 7}])"}},
                       "application/json");
  auto store = MakeStore("hf://org/repo@v1.0/dir", hub.endpoint(), "hf_abc");
  auto list = store->List("");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].key, "a.json");
  EXPECT_EQ((*list)[1].key, "b/c.bin");
  EXPECT_EQ((*list)[1].size, 7u);
  const std::string head = hub.requests()[0].head;
  EXPECT_EQ(head.rfind("GET /api/models/org/repo/tree/v1.0/dir?recursive=true ", 0), 0u) << head;
  EXPECT_NE(head.find("Authorization: Bearer hf_abc"), std::string::npos) << head;
}

TEST(HfStoreTest, UnauthorizedIsOneLineNamingTheRepositoryWithoutTheToken) {
  CannedHttpServer hub({{401, R"({"error": "Invalid credentials in Authorization header"})"},
                        {401, R"({"error": "Invalid credentials in Authorization header"})"}},
                       "application/json");
  auto with_token = MakeStore("hf://org/private", hub.endpoint(), "hf_secret_value");
  auto list = with_token->List("");
  ASSERT_FALSE(list.ok());
  std::string message = list.status().message();
  EXPECT_NE(message.find("hf://org/private: HTTP 401: Invalid credentials in Authorization header"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("env HF_TOKEN"), std::string::npos) << message;
  EXPECT_EQ(message.find("hf_secret_value"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;

  auto anonymous = MakeStore("hf://org/private", hub.endpoint(), "");
  std::vector<uint8_t> dst(4);
  Status read = anonymous->ReadRange("config.json", 0, dst);
  ASSERT_FALSE(read.ok());
  message = read.message();
  EXPECT_NE(message.find("hf://org/private/config.json: HTTP 401"), std::string::npos) << message;
  EXPECT_NE(message.find("needs HF_TOKEN"), std::string::npos) << message;
  EXPECT_EQ(hub.requests()[1].head.find("Authorization"), std::string::npos);
}

TEST(HfStoreTest, WritesAreRefused) {
  auto store = MakeStore("hf://org/repo", "http://127.0.0.1:9", "");
  auto writer = store->OpenWriter("x", {});
  ASSERT_FALSE(writer.ok());
  EXPECT_NE(writer.status().message().find("hf://org/repo/x: hf:// is read-only"), std::string::npos)
      << writer.status().message();
  EXPECT_FALSE(store->Delete("x").ok());
}

}  // namespace
}  // namespace k3::storage
