// HttpServer over real loopback sockets: routing, keep-alive, pipelining, limits, timeouts, auth,
// request ids, SSE flushing, disconnect notification, many idle connections, and graceful drain. Every
// test runs twice: over plain TCP (Plain/...) and over TLS with a fresh self-signed certificate (Tls/...).
#include "src/server/http_server.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <sstream>
#include <thread>

#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "src/server/testing/http_client.h"
#include "src/server/testing/tls_files.h"

namespace k3::server {
namespace {

using namespace std::chrono_literals;
using testing::BuildRequest;
using testing::Fetch;
using testing::TestConnection;
using testing::TestResponse;

HttpResponse Text(std::string body) {
  HttpResponse r;
  r.content_type = "text/plain";
  r.body = std::move(body);
  return r;
}

// A server with a few routes and knobs the tests turn.
class ServerTest : public ::testing::TestWithParam<bool> {
 protected:
  static void SetUpTestSuite() {
    char dir[] = "/tmp/k3_server_test_XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    auto files = testing::WriteSelfSignedCert(dir, "server");
    ASSERT_TRUE(files.ok()) << files.status().ToString();
    tls_files_ = *files;
  }
  static void TearDownTestSuite() {
    std::remove(tls_files_.cert.c_str());
    std::remove(tls_files_.key.c_str());
    ::rmdir(tls_files_.cert.substr(0, tls_files_.cert.rfind('/')).c_str());
  }
  bool tls() const { return GetParam(); }

  void StartServer(ServerOptions options = {}) {
    options.host = "127.0.0.1";
    options.port = 0;
    if (tls()) {
      options.tls.certfile = tls_files_.cert;
      options.tls.keyfile = tls_files_.key;
    }
    testing::SetClientTls({tls() ? tls_files_.cert : std::string()});
    Router router;
    router.Add("GET", "/hello", [](std::shared_ptr<Exchange> ex) { ex->Respond(Text("hello")); });
    router.Add("POST", "/echo", [](std::shared_ptr<Exchange> ex) { ex->Respond(Text(ex->request().body)); });
    router.Add("GET", "/v1/secret", [](std::shared_ptr<Exchange> ex) { ex->Respond(Text("ok")); });
    // Answers from another thread after ?ms= milliseconds.
    router.Add("GET", "/delay", [](std::shared_ptr<Exchange> ex) {
      const std::string& target = ex->request().target;
      const int ms = std::stoi(target.substr(target.find("ms=") + 3));
      std::thread([ex, ms] {
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        ex->Respond(Text(ex->request().target));
      }).detach();
    });
    // Streams events; each waits for the test to allow it (proves one event is flushed before the next).
    router.Add("GET", "/stream", [control = control_](std::shared_ptr<Exchange> ex) {
      ex->OnClientGone([control] { control->SetGone(); });
      ex->StartEvents();
      std::thread([control, ex] {
        for (int i = 0; i < 3; ++i) {
          ex->SendEvent(fmt::format("{{\"i\":{}}}", i));
          if (!control->WaitAllowed(i + 1)) return;
        }
        ex->SendEvent("[DONE]");
        ex->EndEvents();
      }).detach();
    });
    router.Add("GET", "/drop", [](std::shared_ptr<Exchange>) {});  // never answers: abandoned
    auto server = HttpServer::Start(options, std::move(router));
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    port_ = server_->port();
  }
  void AllowNextEvent() { control_->Allow(); }
  void TearDown() override {
    control_->Stop();
    testing::SetClientTls({});
  }

  // Shared with the stream threads, which may outlive the test body.
  struct StreamControl {
    std::mutex mu;
    std::condition_variable cv;
    int allowed = 0;
    bool stop = false;
    bool gone = false;
    void Allow() {
      std::lock_guard<std::mutex> lock(mu);
      ++allowed;
      cv.notify_all();
    }
    void Stop() {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
      cv.notify_all();
    }
    void SetGone() {
      std::lock_guard<std::mutex> lock(mu);
      gone = true;
      cv.notify_all();
    }
    bool WaitAllowed(int n) {
      std::unique_lock<std::mutex> lock(mu);
      return cv.wait_for(lock, 5s, [&] { return allowed >= n || stop; }) && !stop;
    }
    bool WaitGone() {
      std::unique_lock<std::mutex> lock(mu);
      return cv.wait_for(lock, 5s, [&] { return gone; });
    }
  };

  static inline testing::TlsFiles tls_files_;
  std::unique_ptr<HttpServer> server_;
  uint16_t port_ = 0;
  std::shared_ptr<StreamControl> control_ = std::make_shared<StreamControl>();
};

TEST_P(ServerTest, GetRouteAndRequestIds) {
  StartServer();
  auto r = Fetch(port_, "GET", "/hello");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello");
  EXPECT_EQ(r->headers["x-request-id"].size(), 32u);
  auto echoed = Fetch(port_, "GET", "/hello", {}, {"X-Request-Id: my-id-7"});
  ASSERT_TRUE(echoed.ok());
  EXPECT_EQ(echoed->headers["x-request-id"], "my-id-7");
}

TEST_P(ServerTest, NotFoundAndMethodNotAllowedAreOpenAiErrors) {
  StartServer();
  auto r = Fetch(port_, "GET", "/nope");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 404);
  auto j = nlohmann::json::parse(r->body);
  EXPECT_EQ(j["error"]["type"], "not_found_error");
  EXPECT_FALSE(j["error"]["message"].get<std::string>().empty());
  auto m = Fetch(port_, "POST", "/hello", "x");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->status, 405);
  EXPECT_EQ(m->headers["allow"], "GET");
  EXPECT_TRUE(nlohmann::json::parse(m->body).contains("error"));
}

TEST_P(ServerTest, KeepAliveServesManyRequestsOnOneConnection) {
  StartServer();
  auto conn = TestConnection::Connect(port_);
  ASSERT_TRUE(conn.ok());
  for (int i = 0; i < 50; ++i) {
    const std::string body = fmt::format("body {}", i);
    ASSERT_TRUE(conn->Send(BuildRequest("POST", "/echo", body)).ok());
    auto r = conn->Read();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->body, body);
    EXPECT_EQ(r->headers["connection"], "keep-alive");
  }
}

// HEAD runs the GET route (a probe's HEAD /health) and gets its status and Content-Length, no body; the
// connection stays in step for the next request. A path without GET still answers 405.
TEST_P(ServerTest, HeadAnswersLikeGetWithoutTheBody) {
  StartServer();
  auto conn = TestConnection::Connect(port_);
  ASSERT_TRUE(conn.ok());
  ASSERT_TRUE(conn->Send(BuildRequest("HEAD", "/hello") + BuildRequest("GET", "/hello")).ok());
  auto head = conn->Read(std::chrono::seconds(10), nullptr, /*head=*/true);
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->headers["content-length"], "5");
  auto get = conn->Read();
  ASSERT_TRUE(get.ok()) << get.status().ToString();
  EXPECT_EQ(get->body, "hello");
  ASSERT_TRUE(conn->Send(BuildRequest("HEAD", "/echo")).ok());
  auto refused = conn->Read(std::chrono::seconds(10), nullptr, /*head=*/true);
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->status, 405);
}

TEST_P(ServerTest, PipelinedRequestsAreAnsweredInOrder) {
  StartServer();
  auto conn = TestConnection::Connect(port_);
  ASSERT_TRUE(conn.ok());
  // The first answer comes last in time; responses must still be in request order.
  std::string all = BuildRequest("GET", "/delay?ms=150") + BuildRequest("GET", "/delay?ms=1") +
                    BuildRequest("POST", "/echo", "third");
  ASSERT_TRUE(conn->Send(all).ok());
  auto a = conn->Read();
  auto b = conn->Read();
  auto c = conn->Read();
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->body, "/delay?ms=150");
  EXPECT_EQ(b->body, "/delay?ms=1");
  EXPECT_EQ(c->body, "third");
}

TEST_P(ServerTest, ConnectionCloseIsHonoured) {
  StartServer();
  auto conn = TestConnection::Connect(port_);
  ASSERT_TRUE(conn.ok());
  ASSERT_TRUE(conn->Send(BuildRequest("GET", "/hello", {}, {"Connection: close"})).ok());
  auto r = conn->Read();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->headers["connection"], "close");
  EXPECT_TRUE(conn->WaitClosed(2s));
}

TEST_P(ServerTest, BodyOverLimitIs413) {
  ServerOptions options;
  options.max_body_bytes = 1000;
  StartServer(options);
  // Declared length over the limit: answered before the body is read.
  auto r = Fetch(port_, "POST", "/echo", std::string(5000, 'x'));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(nlohmann::json::parse(r->body)["error"]["type"], "invalid_request_error");
  // Chunked body that grows over the limit.
  auto conn = TestConnection::Connect(port_);
  ASSERT_TRUE(conn.ok());
  std::string chunked = "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 4; ++i) chunked += fmt::format("{:x}\r\n{}\r\n", 400, std::string(400, 'y'));
  chunked += "0\r\n\r\n";
  ASSERT_TRUE(conn->Send(chunked).ok());
  auto c = conn->Read();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->status, 413);
  // Within the limit still works.
  auto ok = Fetch(port_, "POST", "/echo", std::string(1000, 'z'));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body.size(), 1000u);
}

TEST_P(ServerTest, ExpectContinueGetsInterimResponse) {
  StartServer();
  auto conn = TestConnection::Connect(port_);
  ASSERT_TRUE(conn.ok());
  ASSERT_TRUE(
      conn->Send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n").ok());
  auto interim = conn->Read();
  ASSERT_TRUE(interim.ok());
  EXPECT_EQ(interim->status, 100);
  ASSERT_TRUE(conn->Send("abc").ok());
  auto r = conn->Read();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->body, "abc");
}

TEST_P(ServerTest, MalformedHttpIs400AndOversizedHeaderIs431) {
  ServerOptions options;
  options.max_header_bytes = 2048;
  StartServer(options);
  auto conn = TestConnection::Connect(port_);
  ASSERT_TRUE(conn.ok());
  ASSERT_TRUE(conn->Send("GARBAGE\x01 / HTTP/9\r\n\r\n").ok());
  auto r = conn->Read();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 400);
  EXPECT_TRUE(nlohmann::json::parse(r->body).contains("error"));
  auto big = Fetch(port_, "GET", "/hello", {}, {"X-Big: " + std::string(4000, 'a')});
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  EXPECT_EQ(big->status, 431);
}

TEST_P(ServerTest, ApiKeyGuardsV1Only) {
  ServerOptions options;
  options.api_key = "sk-test";
  StartServer(options);
  auto none = Fetch(port_, "GET", "/v1/secret");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(nlohmann::json::parse(none->body)["error"]["type"], "authentication_error");
  auto wrong = Fetch(port_, "GET", "/v1/secret", {}, {"Authorization: Bearer sk-nope"});
  ASSERT_TRUE(wrong.ok());
  EXPECT_EQ(wrong->status, 401);
  auto right = Fetch(port_, "GET", "/v1/secret", {}, {"Authorization: Bearer sk-test"});
  ASSERT_TRUE(right.ok());
  EXPECT_EQ(right->status, 200);
  auto open = Fetch(port_, "GET", "/hello");
  ASSERT_TRUE(open.ok());
  EXPECT_EQ(open->status, 200);
  // Anthropic's x-api-key header is accepted beside Bearer; /v1/messages answers in Anthropic's shape.
  auto x_key = Fetch(port_, "GET", "/v1/secret", {}, {"x-api-key: sk-test"});
  ASSERT_TRUE(x_key.ok());
  EXPECT_EQ(x_key->status, 200);
  auto x_wrong = Fetch(port_, "POST", "/v1/messages", "{}", {"x-api-key: sk-nope"});
  ASSERT_TRUE(x_wrong.ok());
  EXPECT_EQ(x_wrong->status, 401);
  const auto body = nlohmann::json::parse(x_wrong->body);
  EXPECT_EQ(body["type"], "error");
  EXPECT_EQ(body["error"]["type"], "authentication_error");
}

TEST_P(ServerTest, EventsAreFlushedOneByOne) {
  StartServer();
  auto conn = TestConnection::Connect(port_);
  ASSERT_TRUE(conn.ok());
  ASSERT_TRUE(conn->Send(BuildRequest("GET", "/stream")).ok());
  std::vector<std::string> seen;
  // The handler sends event i+1 only after this callback has seen event i: without a flush per event
  // the stream would stall and the read would time out.
  auto r = conn->Read(10s, [&](std::string_view chunk) {
    seen.emplace_back(chunk);
    if (seen.size() <= 3) AllowNextEvent();
  });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->headers["content-type"], "text/event-stream; charset=utf-8");
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0], "data: {\"i\":0}\n\n");
  EXPECT_EQ(seen[3], "data: [DONE]\n\n");
  // The connection stays usable.
  ASSERT_TRUE(conn->Send(BuildRequest("GET", "/hello")).ok());
  auto after = conn->Read();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->body, "hello");
}

TEST_P(ServerTest, ClientDisconnectMidStreamIsReported) {
  StartServer();
  {
    auto conn = TestConnection::Connect(port_);
    ASSERT_TRUE(conn.ok());
    ASSERT_TRUE(conn->Send(BuildRequest("GET", "/stream")).ok());
    std::string first;
    (void)conn->Read(500ms, [&](std::string_view chunk) { first = chunk; });
    EXPECT_EQ(first, "data: {\"i\":0}\n\n");
  }  // closed here
  EXPECT_TRUE(control_->WaitGone());
  control_->Stop();  // the stream thread ends
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (server_->active_exchanges() != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(server_->active_exchanges(), 0);
}

TEST_P(ServerTest, AbandonedExchangeGets500) {
  StartServer();
  auto r = Fetch(port_, "GET", "/drop");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 500);
}

TEST_P(ServerTest, IdleAndSlowConnectionsAreClosedByDeadlines) {
  ServerOptions options;
  options.idle_timeout = 200ms;
  options.header_timeout = 300ms;
  StartServer(options);
  auto idle = TestConnection::Connect(port_);
  ASSERT_TRUE(idle.ok());
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(idle->WaitClosed(3s));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 150ms);
  // Slowloris: the header never completes.
  auto slow = TestConnection::Connect(port_);
  ASSERT_TRUE(slow.ok());
  ASSERT_TRUE(slow->Send("GET /hello HTTP/1.1\r\nHost: x\r\n").ok());
  std::thread dribble([&] {
    for (int i = 0; i < 20; ++i) {
      if (!slow->Send("X-A: b\r\n").ok()) return;
      std::this_thread::sleep_for(50ms);
    }
  });
  dribble.join();
  EXPECT_TRUE(slow->WaitClosed(3s));
}

TEST_P(ServerTest, ManyIdleConnectionsDoNotDelayANewRequest) {
  ServerOptions options;
  options.io_threads = 1;
  StartServer(options);
  std::vector<TestConnection> idle;
  for (int i = 0; i < 500; ++i) {
    auto c = TestConnection::Connect(port_);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    idle.push_back(std::move(*c));
  }
  // Half of them have sent part of a header.
  for (size_t i = 0; i < idle.size(); i += 2) ASSERT_TRUE(idle[i].Send("GET /hello HTTP/1.1\r\n").ok());
  const auto t0 = std::chrono::steady_clock::now();
  auto r = Fetch(port_, "GET", "/hello");
  const auto elapsed = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
  EXPECT_LT(elapsed, 250ms);
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (server_->open_connections() < 500 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_GE(server_->open_connections(), 500);
}

TEST_P(ServerTest, DrainFinishesRunningStreamsAndRefusesNewConnections) {
  StartServer();
  auto conn = TestConnection::Connect(port_);
  ASSERT_TRUE(conn.ok());
  ASSERT_TRUE(conn->Send(BuildRequest("GET", "/stream")).ok());
  auto idle = TestConnection::Connect(port_);
  ASSERT_TRUE(idle.ok());
  std::vector<std::string> seen;
  std::future<bool> drained;
  auto r = conn->Read(10s, [&](std::string_view chunk) {
    seen.emplace_back(chunk);
    if (seen.size() == 1) {
      drained = std::async(std::launch::async, [this] { return server_->Drain(5s); });
      std::this_thread::sleep_for(50ms);
    }
    if (seen.size() <= 3) AllowNextEvent();
  });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(seen.size(), 4u);
  EXPECT_EQ(r->headers["connection"], "keep-alive");  // sent before the drain began
  EXPECT_TRUE(drained.get());
  EXPECT_TRUE(conn->WaitClosed(2s));  // closed after the stream ended
  EXPECT_TRUE(idle->WaitClosed(2s));  // idle connections are closed at once
  EXPECT_FALSE(TestConnection::Connect(port_).ok());
  server_->Stop();
}

TEST_P(ServerTest, RequestStopWakesWaiter) {
  StartServer();
  std::thread stopper([this] {
    std::this_thread::sleep_for(20ms);
    server_->RequestStop();
  });
  EXPECT_EQ(server_->WaitForStopSignal(), 0);
  stopper.join();
}

// CORS over the wire: a preflight is answered on any path before auth; answers to an allowed Origin carry
// Access-Control-Allow-Origin, event streams included; a refused preflight is Starlette's 400.
TEST_P(ServerTest, CorsPreflightAndHeaders) {
  ServerOptions options;
  options.api_key = "sk-test";
  StartServer(options);
  auto pre = Fetch(port_, "OPTIONS", "/v1/secret", {},
                   {"Origin: https://app.example", "Access-Control-Request-Method: POST",
                    "Access-Control-Request-Headers: authorization, content-type"});
  ASSERT_TRUE(pre.ok()) << pre.status().ToString();
  EXPECT_EQ(pre->status, 200);
  EXPECT_EQ(pre->body, "OK");
  EXPECT_EQ(pre->headers["access-control-allow-origin"], "*");
  EXPECT_EQ(pre->headers["access-control-allow-headers"], "authorization, content-type");
  EXPECT_EQ(pre->headers["access-control-max-age"], "600");
  auto get = Fetch(port_, "GET", "/hello", {}, {"Origin: https://app.example"});
  ASSERT_TRUE(get.ok());
  EXPECT_EQ(get->headers["access-control-allow-origin"], "*");
  auto plain = Fetch(port_, "GET", "/hello");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->headers.count("access-control-allow-origin"), 0u);
  auto denied = Fetch(port_, "GET", "/v1/secret", {}, {"Origin: https://app.example"});  // 401 still CORS
  ASSERT_TRUE(denied.ok());
  EXPECT_EQ(denied->status, 401);
  EXPECT_EQ(denied->headers["access-control-allow-origin"], "*");
  auto conn = TestConnection::Connect(port_);
  ASSERT_TRUE(conn.ok());
  ASSERT_TRUE(conn->Send(BuildRequest("GET", "/stream", {}, {"Origin: https://app.example"})).ok());
  auto stream = conn->Read(10s, [&](std::string_view) { AllowNextEvent(); });
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  EXPECT_EQ(stream->headers["access-control-allow-origin"], "*");
  EXPECT_EQ(stream->chunks.size(), 4u);
}

TEST_P(ServerTest, CorsListedOriginsAndRefusedPreflight) {
  ServerOptions options;
  options.cors.allowed_origins = {"https://app.example"};
  options.cors.allow_credentials = true;
  StartServer(options);
  auto ok = Fetch(port_, "GET", "/hello", {}, {"Origin: https://app.example"});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->headers["access-control-allow-origin"], "https://app.example");
  EXPECT_EQ(ok->headers["vary"], "Origin");
  EXPECT_EQ(ok->headers["access-control-allow-credentials"], "true");
  auto other = Fetch(port_, "GET", "/hello", {}, {"Origin: https://evil.example"});
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->status, 200);
  EXPECT_EQ(other->headers.count("access-control-allow-origin"), 0u);
  auto refused = Fetch(port_, "OPTIONS", "/nowhere", {},
                       {"Origin: https://evil.example", "Access-Control-Request-Method: GET"});
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->status, 400);
  EXPECT_EQ(refused->body, "Disallowed CORS origin");
}

// HTTP/1.0 has no chunked encoding: a stream goes out without Content-Length or Transfer-Encoding and
// ends when the server closes the connection. A plain HTTP/1.0 request still gets Content-Length.
TEST_P(ServerTest, Http10StreamIsReadUntilClose) {
  StartServer();
  for (int i = 0; i < 3; ++i) AllowNextEvent();
  auto conn = TestConnection::Connect(port_);
  ASSERT_TRUE(conn.ok());
  ASSERT_TRUE(conn->Send("GET /stream HTTP/1.0\r\nHost: x\r\n\r\n").ok());
  auto all = conn->ReadUntilClosed(5s);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  const size_t end = all->find("\r\n\r\n");
  ASSERT_NE(end, std::string::npos) << *all;
  std::string head = all->substr(0, end);
  for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  EXPECT_TRUE(head.starts_with("http/1.1 200")) << head;
  EXPECT_EQ(head.find("transfer-encoding"), std::string::npos) << head;
  EXPECT_EQ(head.find("content-length"), std::string::npos) << head;
  EXPECT_NE(head.find("connection: close"), std::string::npos) << head;
  EXPECT_EQ(all->substr(end + 4),
            "data: {\"i\":0}\n\ndata: {\"i\":1}\n\ndata: {\"i\":2}\n\ndata: [DONE]\n\n");

  auto plain = TestConnection::Connect(port_);
  ASSERT_TRUE(plain.ok());
  ASSERT_TRUE(plain->Send("GET /hello HTTP/1.0\r\n\r\n").ok());
  auto r = plain->Read();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->headers["content-length"], "5");
  EXPECT_EQ(r->body, "hello");
  EXPECT_TRUE(plain->WaitClosed(2s));
}

// The sanitizers' runtime probes memory through a pipe(2); starved of descriptors it reports a false
// "invalid vptr" from the server's log call. The descriptor tests run in the other builds.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// Copies what the default logger writes while it lives (the server logs there).
class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(out_)) {
    spdlog::default_logger()->sinks().push_back(sink_);
  }
  ~LogCapture() { Stop(); }
  std::string Stop() {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
    return out_.str();
  }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

// Idle keep-alive connections fill the descriptor table: a new client is still served, because the
// server closes the connection idle longest to make room, and says so in its log.
TEST_P(ServerTest, OutOfDescriptorsClosesTheOldestIdleConnection) {
  if (tls()) GTEST_SKIP() << "the descriptor accounting is the same over TLS";
  if (kSanitized) GTEST_SKIP() << "the sanitizer runtime needs free descriptors";
  StartServer();
  std::vector<TestConnection> idle;
  for (int i = 0; i < 8; ++i) {
    auto c = TestConnection::Connect(port_);
    ASSERT_TRUE(c.ok());
    idle.push_back(std::move(*c));
  }
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (server_->open_connections() < 8 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_EQ(server_->open_connections(), 8);
  LogCapture log;
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  // Only one more descriptor fits: the client's socket takes it and the server's accept fails.
  const int lowest_free = ::dup(0);
  ASSERT_GE(lowest_free, 0);
  ::close(lowest_free);
  rlimit low = saved;
  low.rlim_cur = static_cast<rlim_t>(lowest_free + 1);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  auto fresh = Fetch(port_, "GET", "/hello");
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  const std::string logged = log.Stop();
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_EQ(fresh->status, 200);
  EXPECT_NE(logged.find("out of file descriptors"), std::string::npos) << logged;
  int closed = 0;
  for (auto& c : idle) closed += c.WaitClosed(10ms) ? 1 : 0;
  EXPECT_GE(closed, 1);
}

// Out of descriptors with every connection busy (streams in flight): the server gives up its spare
// descriptor to accept the new client and answers it 503, readable, instead of leaving it in the backlog.
TEST_P(ServerTest, OutOfDescriptorsWithNoIdleConnectionAnswers503) {
  if (tls()) GTEST_SKIP() << "a TLS client is closed instead (no 503 before a handshake)";
  if (kSanitized) GTEST_SKIP() << "the sanitizer runtime needs free descriptors";
  StartServer();
  std::vector<TestConnection> busy;
  for (int i = 0; i < 3; ++i) {
    auto c = TestConnection::Connect(port_);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(c->Send(BuildRequest("GET", "/stream")).ok());
    std::string first;
    (void)c->Read(300ms, [&](std::string_view chunk) { first = chunk; });  // the stream waits: times out
    ASSERT_EQ(first, "data: {\"i\":0}\n\n");
    busy.push_back(std::move(*c));
  }
  LogCapture log;
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  const int lowest_free = ::dup(0);
  ASSERT_GE(lowest_free, 0);
  ::close(lowest_free);
  rlimit low = saved;
  low.rlim_cur = static_cast<rlim_t>(lowest_free + 1);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  auto refused = Fetch(port_, "GET", "/hello");
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  const std::string logged = log.Stop();
  ASSERT_TRUE(refused.ok()) << refused.status().ToString();
  EXPECT_EQ(refused->status, 503);
  EXPECT_EQ(refused->headers["retry-after"], "1");
  EXPECT_NE(logged.find("no connection is idle"), std::string::npos) << logged;
  // The spare is back and the server serves normally once descriptors are free again.
  auto after = Fetch(port_, "GET", "/hello");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->status, 200);
}

INSTANTIATE_TEST_SUITE_P(Transport, ServerTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Tls" : "Plain";
                         });

}  // namespace
}  // namespace k3::server
