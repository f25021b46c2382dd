// HttpServer over TLS: start-up errors for bad --ssl-* files, a plain-HTTP client on the HTTPS port,
// libcurl (a real HTTPS client, verifying the certificate) for a request and an SSE stream, and required
// client certificates.
// The rest of the server's behaviour over TLS is covered by the Tls/ instances in http_server_test.cc.
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <curl/curl.h>
#include <gtest/gtest.h>

#include "src/server/http_server.h"
#include "src/server/testing/http_client.h"
#include "src/server/testing/tls_files.h"

namespace k3::server {
namespace {

using testing::BuildRequest;
using testing::Fetch;
using testing::TestConnection;

// One libcurl transfer: status and body, or curl's error text.
struct CurlResult {
  long status = 0;
  std::string content_type;
  std::string body;
  std::string error;
};

CurlResult CurlFetch(const std::string& url, const std::string& ca_file, const char* post_body = nullptr) {
  CurlResult result;
  CURL* curl = curl_easy_init();
  char errbuf[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 10000L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
  if (!ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, ca_file.c_str());
  if (post_body != nullptr) curl_easy_setopt(curl, CURLOPT_POSTFIELDS, post_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &result.body);
  curl_easy_setopt(
      curl, CURLOPT_WRITEFUNCTION, +[](char* data, size_t size, size_t n, void* out) {
        static_cast<std::string*>(out)->append(data, size * n);
        return size * n;
      });
  const CURLcode code = curl_easy_perform(curl);
  if (code != CURLE_OK) {
    result.error = fmt::format("{}: {}", curl_easy_strerror(code), errbuf);
  } else {
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &result.status);
    char* type = nullptr;
    curl_easy_getinfo(curl, CURLINFO_CONTENT_TYPE, &type);
    if (type != nullptr) result.content_type = type;
  }
  curl_easy_cleanup(curl);
  return result;
}

class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char dir[] = "/tmp/k3_tls_test_XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
    auto server = testing::WriteSelfSignedCert(dir_, "server");
    auto other = testing::WriteSelfSignedCert(dir_, "other");
    auto client = testing::WriteSelfSignedCert(dir_, "client");
    ASSERT_TRUE(server.ok() && other.ok() && client.ok());
    server_files_ = *server;
    other_files_ = *other;
    client_files_ = *client;
  }
  static void TearDownTestSuite() {
    for (const auto* f : {&server_files_, &other_files_, &client_files_}) {
      std::remove(f->cert.c_str());
      std::remove(f->key.c_str());
    }
    std::remove((dir_ + "/garbage.pem").c_str());
    ::rmdir(dir_.c_str());
  }
  void TearDown() override { testing::SetClientTls({}); }

  static Result<std::unique_ptr<HttpServer>> Start(TlsOptions tls) {
    ServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    options.tls = std::move(tls);
    Router router;
    router.Add("GET", "/hello", [](std::shared_ptr<Exchange> ex) {
      HttpResponse r;
      r.content_type = "text/plain";
      r.body = "hello";
      ex->Respond(std::move(r));
    });
    router.Add("POST", "/stream", [](std::shared_ptr<Exchange> ex) {
      ex->StartEvents();
      for (int i = 0; i < 3; ++i) ex->SendEvent(fmt::format("{{\"i\":{}}}", i));
      ex->SendEvent("[DONE]");
      ex->EndEvents();
    });
    return HttpServer::Start(options, std::move(router));
  }
  TlsOptions ServerTls() const { return {server_files_.cert, server_files_.key}; }

  static inline std::string dir_;
  static inline testing::TlsFiles server_files_, other_files_, client_files_;
};

// Each bad configuration is refused at start-up with the flag, the file and what to give instead.
TEST_F(TlsTest, BadFilesAreStartUpErrorsNamingFileAndFix) {
  const std::string garbage = dir_ + "/garbage.pem";
  std::ofstream(garbage) << "not a certificate\n";
  struct Case {
    TlsOptions tls;
    std::vector<std::string> expected;
  };
  const std::vector<Case> cases = {
      {{dir_ + "/missing.crt", server_files_.key}, {"--ssl-certfile", "missing.crt", "No such file"}},
      {{server_files_.cert, dir_ + "/missing.key"}, {"--ssl-keyfile", "missing.key", "No such file"}},
      {{garbage, server_files_.key}, {"--ssl-certfile", "garbage.pem", "BEGIN CERTIFICATE"}},
      {{server_files_.cert, garbage}, {"--ssl-keyfile", "garbage.pem", "unencrypted PEM private key"}},
      {{server_files_.cert, other_files_.key}, {"does not match", "other.key", "server.crt"}},
      {{server_files_.cert, ""}, {"--ssl-certfile", "holds no private key", "--ssl-keyfile"}},
      {{"", server_files_.key}, {"--ssl-keyfile is given without --ssl-certfile"}},
      {{server_files_.cert, server_files_.key, "", 2}, {"--ssl-cert-reqs 2", "--ssl-ca-certs"}},
      {{server_files_.cert, server_files_.key, "", 7}, {"--ssl-cert-reqs must be 0", "got 7"}},
      {{server_files_.cert, server_files_.key, dir_, 1}, {"--ssl-ca-certs", "not a regular file"}},
  };
  for (const Case& c : cases) {
    auto server = Start(c.tls);
    ASSERT_FALSE(server.ok()) << c.expected[0];
    for (const std::string& part : c.expected) {
      EXPECT_NE(server.status().message().find(part), std::string::npos)
          << "'" << part << "' not in: " << server.status().message();
    }
    // The key's bytes never appear in an error.
    EXPECT_EQ(server.status().message().find("PRIVATE KEY-----"), std::string::npos);
  }
  // A file holding both certificate and key is enough (uvicorn's load_cert_chain(certfile)).
  const std::string both = dir_ + "/both.pem";
  {
    std::ofstream out(both);
    out << std::ifstream(server_files_.cert).rdbuf() << std::ifstream(server_files_.key).rdbuf();
  }
  auto combined = Start({both, ""});
  std::remove(both.c_str());
  EXPECT_TRUE(combined.ok()) << combined.status().ToString();
}

// Plain HTTP sent to the HTTPS port: the connection is closed (no answer, no hang) and the server keeps
// serving TLS clients.
TEST_F(TlsTest, PlainHttpOnTlsPortIsClosed) {
  auto server = Start(ServerTls());
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const uint16_t port = (*server)->port();
  auto plain = TestConnection::Connect(port);
  ASSERT_TRUE(plain.ok());
  ASSERT_TRUE(plain->Send(BuildRequest("GET", "/hello")).ok());
  EXPECT_TRUE(plain->WaitClosed(std::chrono::seconds(3)));
  testing::SetClientTls({server_files_.cert});
  auto r = Fetch(port, "GET", "/hello");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "hello");
}

// libcurl: a request and an SSE stream, the certificate verified against the test CA (and refused
// without it).
TEST_F(TlsTest, CurlRequestAndEventStreamOverHttps) {
  auto server = Start(ServerTls());
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const std::string base = fmt::format("https://127.0.0.1:{}", (*server)->port());
  CurlResult r = CurlFetch(base + "/hello", server_files_.cert);
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello");
  CurlResult s = CurlFetch(base + "/stream", server_files_.cert, "{}");
  ASSERT_EQ(s.error, "");
  EXPECT_EQ(s.status, 200);
  EXPECT_EQ(s.content_type, "text/event-stream; charset=utf-8");
  EXPECT_EQ(s.body, "data: {\"i\":0}\n\ndata: {\"i\":1}\n\ndata: {\"i\":2}\n\ndata: [DONE]\n\n");
  CurlResult untrusted = CurlFetch(base + "/hello", "");  // the system's CAs do not know the test certificate
  EXPECT_NE(untrusted.error, "");
  EXPECT_EQ(untrusted.status, 0);
}

// --ssl-cert-reqs 2 with --ssl-ca-certs: a client with a certificate from that CA is served, one without
// is refused in the handshake.
TEST_F(TlsTest, RequiredClientCertificate) {
  TlsOptions tls = ServerTls();
  tls.ca_certs = client_files_.cert;  // self-signed: its own CA
  tls.cert_reqs = 2;
  auto server = Start(tls);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const uint16_t port = (*server)->port();
  testing::SetClientTls({server_files_.cert, client_files_.cert, client_files_.key});
  auto with_cert = Fetch(port, "GET", "/hello");
  ASSERT_TRUE(with_cert.ok()) << with_cert.status().ToString();
  EXPECT_EQ(with_cert->body, "hello");
  testing::SetClientTls({server_files_.cert});
  auto without = Fetch(port, "GET", "/hello");  // TLS 1.3: the refusal may arrive after SSL_connect
  EXPECT_FALSE(without.ok());
  testing::SetClientTls({server_files_.cert, other_files_.cert, other_files_.key});  // unknown CA
  EXPECT_FALSE(Fetch(port, "GET", "/hello").ok());
}

// --ssl-cert-reqs 1: a client without a certificate is served; one that sends a certificate the CA bundle
// does not vouch for is refused.
TEST_F(TlsTest, OptionalClientCertificate) {
  TlsOptions tls = ServerTls();
  tls.ca_certs = client_files_.cert;
  tls.cert_reqs = 1;
  auto server = Start(tls);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const uint16_t port = (*server)->port();
  testing::SetClientTls({server_files_.cert});
  auto without = Fetch(port, "GET", "/hello");
  ASSERT_TRUE(without.ok()) << without.status().ToString();
  EXPECT_EQ(without->body, "hello");
  testing::SetClientTls({server_files_.cert, client_files_.cert, client_files_.key});
  auto with_cert = Fetch(port, "GET", "/hello");
  ASSERT_TRUE(with_cert.ok()) << with_cert.status().ToString();
  testing::SetClientTls({server_files_.cert, other_files_.cert, other_files_.key});
  EXPECT_FALSE(Fetch(port, "GET", "/hello").ok());
}

}  // namespace
}  // namespace k3::server
