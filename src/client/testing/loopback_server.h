// LoopbackServer: a small real HTTP/1.1 server on 127.0.0.1 (an ephemeral port) for the client's tests
// and benchmark. Each connection gets a thread that parses requests (Content-Length bodies, keep-alive)
// and hands them to a handler, which writes whatever bytes it likes: well-formed OpenAI answers, or
// broken ones (wrong status, non-JSON, bad SSE framing, a connection closed halfway).
//
//   LoopbackServer server([](const TestRequest& req, TestConnection& conn) {
//     conn.Write(HttpResponseText(200, "application/json", R"({"object":"list","data":[]})"));
//   });
//   client.Get(server.url() + "/v1/models");
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace k3::client::testing {

struct TestRequest {
  std::string method;
  std::string path;                            // with the query string
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

class TestConnection {
 public:
  explicit TestConnection(int fd) : fd_(fd) {}
  // Writes all bytes; false when the peer has gone.
  bool Write(std::string_view bytes);
  // Closes the connection once the handler returns (no keep-alive).
  void CloseAfterResponse() { close_ = true; }
  bool close_requested() const { return close_; }

 private:
  int fd_;
  bool close_ = false;
};

using TestHandler = std::function<void(const TestRequest&, TestConnection&)>;

class LoopbackServer {
 public:
  explicit LoopbackServer(TestHandler handler);
  ~LoopbackServer();
  LoopbackServer(const LoopbackServer&) = delete;
  LoopbackServer& operator=(const LoopbackServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int64_t requests() const { return requests_.load(); }

 private:
  void AcceptLoop();
  void Serve(int fd);

  TestHandler handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> requests_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<int> fds_;
  std::vector<std::thread> workers_;
};

// A complete response with Content-Length (keep-alive).
std::string HttpResponseText(int status, std::string_view content_type, std::string_view body);
// The head of a chunked text/event-stream response; then WriteChunk per piece and WriteLastChunk.
void WriteSseHead(TestConnection& conn);
void WriteChunk(TestConnection& conn, std::string_view data);
void WriteLastChunk(TestConnection& conn);

}  // namespace k3::client::testing
