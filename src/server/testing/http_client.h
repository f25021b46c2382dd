// A blocking HTTP/1.1 test client over POSIX sockets: send raw bytes, read one response at a time
// (Content-Length or chunked, each chunk reported as it arrives). Only for tests of the server.
// After SetClientTls every new connection speaks TLS (OpenSSL) instead, with the same calls.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"

struct ssl_st;  // OpenSSL's SSL

namespace k3::server::testing {

// TLS for the connections made from now on (process-wide). ca_file: the PEM the server's certificate must
// chain to (its name is checked against "localhost"); empty: plain TCP. cert/key: a client certificate.
struct ClientTls {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
};
void SetClientTls(ClientTls tls);

struct TestResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;                            // de-chunked
  std::vector<std::string> chunks;             // chunk payloads in arrival order (chunked responses)
};

// "METHOD PATH HTTP/1.1" with Host, Content-Length (when a body is given) and the extra header lines.
std::string BuildRequest(std::string_view method, std::string_view path, std::string_view body = {},
                         const std::vector<std::string>& extra_headers = {});

class TestConnection {
 public:
  TestConnection() = default;
  ~TestConnection();
  TestConnection(TestConnection&& other) noexcept;
  TestConnection& operator=(TestConnection&& other) noexcept;

  static Result<TestConnection> Connect(uint16_t port);
  Status Send(std::string_view bytes);
  // Reads one response. `on_chunk` sees each chunk of a chunked body as soon as it is read. `head`: the
  // answer to a HEAD request (no body follows its headers, whatever Content-Length says).
  Result<TestResponse> Read(std::chrono::milliseconds timeout = std::chrono::seconds(10),
                            const std::function<void(std::string_view)>& on_chunk = nullptr,
                            bool head = false);
  // Everything until the peer closes the connection (an HTTP/1.0 stream), or an error at the timeout.
  Result<std::string> ReadUntilClosed(std::chrono::milliseconds timeout);
  // True when the peer closes the connection (read returns 0 or an error) within `timeout`.
  bool WaitClosed(std::chrono::milliseconds timeout);
  void Close();
  bool open() const { return fd_ >= 0; }

 private:
  explicit TestConnection(int fd) : fd_(fd) {}
  ssize_t RecvSome(char* buf, size_t n);  // > 0 bytes, 0 closed, < 0 error
  bool Pending() const;                   // TLS bytes already decrypted (poll would not see them)
  // Ensures buffer_ holds at least n bytes (false on EOF / timeout).
  bool Fill(size_t n, std::chrono::steady_clock::time_point deadline);
  Result<std::string> ReadLine(std::chrono::steady_clock::time_point deadline);

  int fd_ = -1;
  ssl_st* ssl_ = nullptr;
  std::string buffer_;
};

// Request + response on a fresh connection.
Result<TestResponse> Fetch(uint16_t port, std::string_view method, std::string_view path,
                           std::string_view body = {}, const std::vector<std::string>& extra_headers = {});

}  // namespace k3::server::testing
