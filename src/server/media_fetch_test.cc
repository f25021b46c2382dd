// MediaFetcher against a real loopback HTTP server and real files: allowed hosts, redirects checked again
// (a disallowed target is never contacted), size and time limits, file: URLs confined to one directory
// (symlinks and ".." resolved first).
#include "src/server/media_fetch.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "src/server/http_server.h"

namespace k3::server {
namespace {

using namespace std::chrono_literals;

class MediaFetchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    Router router;
    auto image_hits = image_hits_;
    router.Add("GET", "/img.png", [image_hits](std::shared_ptr<Exchange> ex) {
      ++*image_hits;
      HttpResponse r;
      r.content_type = "image/png";
      r.body = "PNGBYTES";
      ex->Respond(std::move(r));
    });
    router.Add("GET", "/big", [](std::shared_ptr<Exchange> ex) {
      HttpResponse r;
      r.content_type = "image/png";
      r.body = std::string(4096, 'x');
      ex->Respond(std::move(r));
    });
    router.Add("GET", "/slow", [](std::shared_ptr<Exchange> ex) {
      std::thread([ex] {
        std::this_thread::sleep_for(1500ms);
        HttpResponse r;
        r.body = "late";
        ex->Respond(std::move(r));
      }).detach();
    });
    auto port = port_;
    auto redirect = [port](const std::string& host, const std::string& path) {
      return [port, host, path](std::shared_ptr<Exchange> ex) {
        HttpResponse r;
        r.status = 302;
        r.headers.push_back({"Location", "http://" + host + ":" + std::to_string(*port) + path});
        ex->Respond(std::move(r));
      };
    };
    router.Add("GET", "/redirect-ok", redirect("127.0.0.1", "/img.png"));
    router.Add("GET", "/redirect-away", redirect("localhost", "/img.png"));
    router.Add("GET", "/loop", redirect("127.0.0.1", "/loop"));
    auto server = HttpServer::Start(options, std::move(router));
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    *port_ = server_->port();
  }
  std::string Url(const std::string& host, const std::string& path) const {
    return "http://" + host + ":" + std::to_string(*port_) + path;
  }
  MediaFetcher Fetcher(std::vector<std::string> domains, int64_t max_bytes = 1024) const {
    MediaFetchOptions options;
    options.allowed_domains = std::move(domains);
    options.max_bytes = max_bytes;
    options.timeout = 500ms;
    return MediaFetcher(options);
  }

  std::shared_ptr<std::atomic<int>> image_hits_ = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<int> port_ = std::make_shared<int>(0);
  std::unique_ptr<HttpServer> server_;
};

TEST_F(MediaFetchTest, AllowedHostsOnlyAndRedirectsCheckedAgain) {
  const MediaFetcher fetcher = Fetcher({"127.0.0.1"});
  auto ok = fetcher.Fetch(Url("127.0.0.1", "/img.png"));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*ok, "PNGBYTES");
  auto redirected = fetcher.Fetch(Url("127.0.0.1", "/redirect-ok"));
  ASSERT_TRUE(redirected.ok()) << redirected.status().ToString();
  EXPECT_EQ(*redirected, "PNGBYTES");
  EXPECT_EQ(image_hits_->load(), 2);

  // A host not listed, directly or through a redirect: refused before any connection to it.
  auto other = fetcher.Fetch(Url("localhost", "/img.png"));
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("'localhost' is not in --allowed-media-domains"),
            std::string::npos);
  auto away = fetcher.Fetch(Url("127.0.0.1", "/redirect-away"));
  ASSERT_FALSE(away.ok());
  EXPECT_NE(away.status().message().find("redirected"), std::string::npos) << away.status().ToString();
  EXPECT_EQ(image_hits_->load(), 2);  // the image behind the disallowed host was never fetched

  // No list at all: nothing over http(s).
  auto none = Fetcher({}).Fetch(Url("127.0.0.1", "/img.png"));
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("--allowed-media-domains"), std::string::npos);
  EXPECT_EQ(image_hits_->load(), 2);
  EXPECT_EQ(UrlHost("https://User:pw@Img.Example:8443/a?b"), "img.example");
  EXPECT_EQ(UrlHost("http://[::1]:80/x"), "::1");
}

TEST_F(MediaFetchTest, SizeTimeStatusAndRedirectLimits) {
  const MediaFetcher fetcher = Fetcher({"127.0.0.1"}, 1024);
  auto big = fetcher.Fetch(Url("127.0.0.1", "/big"));
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("larger than 1024 bytes"), std::string::npos);
  const auto start = std::chrono::steady_clock::now();
  auto slow = fetcher.Fetch(Url("127.0.0.1", "/slow"));
  ASSERT_FALSE(slow.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1400ms);
  auto missing = fetcher.Fetch(Url("127.0.0.1", "/nothing"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("HTTP 404"), std::string::npos) << missing.status().ToString();
  auto loop = fetcher.Fetch(Url("127.0.0.1", "/loop"));
  ASSERT_FALSE(loop.ok());
  EXPECT_NE(loop.status().message().find("redirects"), std::string::npos);
}

TEST(MediaFetchFileTest, FilesOnlyUnderTheAllowedDirectory) {
  char root_template[] = "/tmp/k3_media_fetch_XXXXXX";
  ASSERT_NE(::mkdtemp(root_template), nullptr);
  const std::filesystem::path root(root_template);
  std::filesystem::create_directory(root / "allowed");
  std::ofstream(root / "allowed" / "a b.png") << "inside";
  std::ofstream(root / "secret.txt") << "outside";
  std::filesystem::create_symlink(root / "secret.txt", root / "allowed" / "link.png");
  MediaFetchOptions options;
  options.allowed_local_path = (root / "allowed").string();
  options.max_bytes = 1024;
  const MediaFetcher fetcher(options);
  const std::string base = "file://" + (root / "allowed").string();
  auto ok = fetcher.Fetch(base + "/a%20b.png");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*ok, "inside");
  EXPECT_FALSE(fetcher.Fetch(base + "/../secret.txt").ok());
  auto link = fetcher.Fetch(base + "/link.png");
  ASSERT_FALSE(link.ok());
  EXPECT_NE(link.status().message().find("outside --allowed-local-media-path"), std::string::npos);
  EXPECT_FALSE(fetcher.Fetch(base).ok());  // the directory itself
  EXPECT_FALSE(fetcher.Fetch(base + "/missing.png").ok());
  EXPECT_FALSE(fetcher.Fetch("file://otherhost" + (root / "allowed" / "a b.png").string()).ok());
  EXPECT_FALSE(fetcher.Fetch(base + "/%zz").ok());
  auto refused = MediaFetcher(MediaFetchOptions{}).Fetch(base + "/a%20b.png");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("--allowed-local-media-path"), std::string::npos);
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace k3::server
