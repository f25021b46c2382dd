// HttpClient and ParseEndpoint over real loopback sockets: answers, HTTP errors, refused connections,
// timeouts, broken and non-HTTP(S) peers, streaming bodies, non-OpenAI answers.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/client/endpoint.h"
#include "src/client/http.h"
#include "src/client/openai_stream.h"
#include "src/client/testing/loopback_server.h"

namespace k3::client {
namespace {

using ::testing::HasSubstr;
using testing::HttpResponseText;
using testing::LoopbackServer;
using testing::TestConnection;
using testing::TestRequest;

// A port nobody listens on: bound then closed.
int UnusedPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

TEST(EndpointTest, NormalisesBaseUrl) {
  for (const char* url : {"http://h:8000", "http://h:8000/", "http://h:8000/v1", "http://h:8000/v1/"}) {
    auto e = ParseEndpoint(url, "");
    ASSERT_TRUE(e.ok()) << url;
    EXPECT_EQ(e->base, "http://h:8000") << url;
    EXPECT_EQ(e->Url("/v1/models"), "http://h:8000/v1/models");
  }
  auto prefixed = ParseEndpoint("https://x.example/serving/v1", "k");
  ASSERT_TRUE(prefixed.ok());
  EXPECT_EQ(prefixed->Url("/health"), "https://x.example/serving/health");
  EXPECT_THAT(prefixed->JsonHeaders(), ::testing::Contains("Authorization: Bearer k"));
  EXPECT_FALSE(ParseEndpoint("localhost:8000", "").ok());
  EXPECT_THAT(ParseEndpoint("ftp://h", "").status().message(), HasSubstr("http:// or https://"));
}

TEST(HttpClientTest, GetAndPostWithHeaders) {
  LoopbackServer server([](const TestRequest& req, TestConnection& conn) {
    const std::string auth = req.headers.count("authorization") ? req.headers.at("authorization") : "";
    conn.Write(
        HttpResponseText(201, "application/json", req.method + " " + req.path + " " + auth + " " + req.body));
  });
  HttpClient client;
  auto get = client.Get(server.url() + "/a", {"Authorization: Bearer s3cret"});
  ASSERT_TRUE(get.ok()) << get.status().ToString();
  EXPECT_EQ(get->status, 201);
  EXPECT_EQ(get->content_type, "application/json");
  EXPECT_EQ(get->body, "GET /a Bearer s3cret ");
  auto post = client.Post(server.url() + "/b", "{\"x\":1}", {"Content-Type: application/json"});
  ASSERT_TRUE(post.ok());
  EXPECT_EQ(post->body, "POST /b  {\"x\":1}");
  EXPECT_EQ(server.requests(), 2);
}

TEST(HttpClientTest, StreamsTheBodyInPieces) {
  LoopbackServer server([](const TestRequest&, TestConnection& conn) {
    testing::WriteSseHead(conn);
    for (int i = 0; i < 3; ++i) {
      testing::WriteChunk(conn, "data: " + std::to_string(i) + "\n\n");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    testing::WriteLastChunk(conn);
  });
  HttpClient client;
  std::vector<std::string> pieces;
  auto r = client.PostStreaming(server.url() + "/s", "{}", {},
                                [&](std::string_view p) { pieces.emplace_back(p); });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->content_type, "text/event-stream");
  EXPECT_TRUE(r->body.empty());
  ASSERT_EQ(pieces.size(), 3u);  // the pauses keep the chunks apart
  EXPECT_EQ(pieces[2], "data: 2\n\n");
}

TEST(HttpClientTest, RefusedConnectionIsNamed) {
  HttpClient client;
  const std::string url = "http://127.0.0.1:" + std::to_string(UnusedPort()) + "/v1/models";
  auto r = client.Get(url);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_THAT(r.status().message(), HasSubstr("connection refused: " + url));
}

TEST(HttpClientTest, TimeoutIsNamed) {
  LoopbackServer server([](const TestRequest&, TestConnection& conn) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    conn.Write(HttpResponseText(200, "text/plain", "late"));
  });
  HttpClient client(HttpOptions{.timeout_s = 0.3});
  const auto start = std::chrono::steady_clock::now();
  auto r = client.Get(server.url() + "/slow");
  ASSERT_FALSE(r.ok());
  // "timed out after 0.3 s: URL" (the measured time: about 0.3 s, more on a loaded machine).
  EXPECT_THAT(r.status().message(), ::testing::MatchesRegex("timed out after [0-9]+\\.[0-9] s: .*/slow.*"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1400));
}

TEST(HttpClientTest, ClosedWithoutAnswerAndNonHttpPeers) {
  LoopbackServer closer([](const TestRequest&, TestConnection& conn) { conn.CloseAfterResponse(); });
  HttpClient client;
  auto r = client.Get(closer.url() + "/x");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("closed the connection without answering"));

  LoopbackServer garbage([](const TestRequest&, TestConnection& conn) {
    conn.Write("SSH-2.0-OpenSSH_9.2\r\n");
    conn.CloseAfterResponse();
  });
  auto g = client.Get(garbage.url() + "/x");
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(g.status().message(), HasSubstr("not an HTTP server"));
}

TEST(HttpClientTest, HttpsAgainstPlainHttpIsATlsError) {
  // A plain-HTTP peer that answers whatever arrives (here a TLS ClientHello) with an HTTP 400.
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  socklen_t len = sizeof(addr);
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  std::thread peer([listener] {
    const int fd = ::accept(listener, nullptr, nullptr);
    char buf[4096];
    if (::recv(fd, buf, sizeof(buf), 0) > 0) {
      const char reply[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
      ::send(fd, reply, sizeof(reply) - 1, MSG_NOSIGNAL);
    }
    ::close(fd);
  });
  HttpClient client(HttpOptions{.timeout_s = 10, .connect_timeout_s = 5});
  const std::string https = "https://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/";
  auto t = client.Get(https);
  peer.join();
  ::close(listener);
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("TLS error: " + https));
}

TEST(ParseJsonAnswerTest, OpenAiErrorsHtmlAndNonObjects) {
  HttpResponse ok{200, "application/json", R"({"object":"list"})", 0};
  ASSERT_TRUE(ParseJsonAnswer(ok, "GET /v1/models").ok());

  HttpResponse error{401, "application/json",
                     R"({"error":{"message":"bad key","type":"authentication_error"}})", 0};
  EXPECT_EQ(ParseJsonAnswer(error, "GET /v1/models").status().message(), "GET /v1/models: HTTP 401: bad key");

  HttpResponse html{200, "text/html", "<html><body>Welcome to nginx!</body></html>", 0};
  const std::string message = ParseJsonAnswer(html, "GET /v1/models").status().message();
  EXPECT_THAT(message, HasSubstr("not JSON (HTTP 200, content-type 'text/html')"));
  EXPECT_THAT(message, HasSubstr("Welcome to nginx"));
  EXPECT_THAT(message, HasSubstr("OpenAI-compatible"));

  HttpResponse array{200, "application/json", "[1,2]", 0};
  EXPECT_THAT(ParseJsonAnswer(array, "x").status().message(), HasSubstr("expected a JSON object"));

  HttpResponse plain_error{502, "text/plain", "Bad Gateway", 0};
  EXPECT_EQ(ParseJsonAnswer(plain_error, "x").status().message(), "x: HTTP 502: 'Bad Gateway'");
}

}  // namespace
}  // namespace k3::client
