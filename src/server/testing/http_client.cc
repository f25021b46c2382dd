// Blocking HTTP/1.1 test client (POSIX sockets, poll for deadlines; OpenSSL over them for TLS).
#include "src/server/testing/http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>
#include <utility>

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace k3::server::testing {

using Clock = std::chrono::steady_clock;

namespace {
std::mutex tls_mu;
ClientTls client_tls;
}  // namespace

void SetClientTls(ClientTls tls) {
  std::signal(SIGPIPE, SIG_IGN);  // OpenSSL writes with write(2): a closed peer must not kill the test
  std::lock_guard<std::mutex> lock(tls_mu);
  client_tls = std::move(tls);
}

std::string BuildRequest(std::string_view method, std::string_view path, std::string_view body,
                         const std::vector<std::string>& extra_headers) {
  std::string out = fmt::format("{} {} HTTP/1.1\r\nHost: 127.0.0.1\r\n", method, path);
  if (!body.empty() || method == "POST") out += fmt::format("Content-Length: {}\r\n", body.size());
  for (const auto& h : extra_headers) out += h + "\r\n";
  out += "\r\n";
  out += body;
  return out;
}

TestConnection::~TestConnection() { Close(); }
TestConnection::TestConnection(TestConnection&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      ssl_(std::exchange(other.ssl_, nullptr)),
      buffer_(std::move(other.buffer_)) {}
TestConnection& TestConnection::operator=(TestConnection&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
    ssl_ = std::exchange(other.ssl_, nullptr);
    buffer_ = std::move(other.buffer_);
  }
  return *this;
}

void TestConnection::Close() {
  if (ssl_ != nullptr) SSL_free(ssl_);  // no close_notify: the tests close like a client that vanished
  ssl_ = nullptr;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

ssize_t TestConnection::RecvSome(char* buf, size_t n) {
  if (ssl_ == nullptr) return ::recv(fd_, buf, n, 0);
  const int got = SSL_read(ssl_, buf, static_cast<int>(n));
  ERR_clear_error();
  return got;
}

bool TestConnection::Pending() const { return ssl_ != nullptr && SSL_pending(ssl_) > 0; }

Result<TestConnection> TestConnection::Connect(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return IoError("socket: {}", std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    ::close(fd);
    return IoError("connect to port {}: {}", port, std::strerror(err));
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  TestConnection conn(fd);
  ClientTls tls;
  {
    std::lock_guard<std::mutex> lock(tls_mu);
    tls = client_tls;
  }
  if (tls.ca_file.empty()) return conn;
  // Blocking handshake, bounded: a server that never answers fails it after 10 s.
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) return Internal("SSL_CTX_new");
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  bool ok = SSL_CTX_load_verify_locations(ctx, tls.ca_file.c_str(), nullptr) == 1;
  if (ok && !tls.cert_file.empty()) {
    ok = SSL_CTX_use_certificate_file(ctx, tls.cert_file.c_str(), SSL_FILETYPE_PEM) == 1 &&
         SSL_CTX_use_PrivateKey_file(ctx, tls.key_file.c_str(), SSL_FILETYPE_PEM) == 1;
  }
  conn.ssl_ = ok ? SSL_new(ctx) : nullptr;
  SSL_CTX_free(ctx);  // the SSL holds its own reference
  if (conn.ssl_ == nullptr) return Internal("client TLS setup failed ({})", tls.ca_file);
  SSL_set_fd(conn.ssl_, fd);
  SSL_set_tlsext_host_name(conn.ssl_, "localhost");
  SSL_set1_host(conn.ssl_, "localhost");
  if (SSL_connect(conn.ssl_) != 1) {
    char reason[256];
    ERR_error_string_n(ERR_get_error(), reason, sizeof(reason));
    ERR_clear_error();
    return IoError("TLS handshake with port {} failed: {}", port, reason);
  }
  return conn;
}

Status TestConnection::Send(std::string_view bytes) {
  while (!bytes.empty()) {
    if (ssl_ != nullptr) {
      const int n = SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size()));
      ERR_clear_error();
      if (n <= 0) return IoError("TLS write failed");
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError("send: {}", std::strerror(errno));
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return OkStatus();
}

bool TestConnection::Fill(size_t n, Clock::time_point deadline) {
  char tmp[65536];
  while (buffer_.size() < n) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (!Pending() && ::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    const ssize_t got = RecvSome(tmp, sizeof(tmp));
    if (got <= 0) return false;
    buffer_.append(tmp, static_cast<size_t>(got));
  }
  return true;
}

Result<std::string> TestConnection::ReadLine(Clock::time_point deadline) {
  while (true) {
    const size_t end = buffer_.find("\r\n");
    if (end != std::string::npos) {
      std::string line = buffer_.substr(0, end);
      buffer_.erase(0, end + 2);
      return line;
    }
    if (!Fill(buffer_.size() + 1, deadline)) return IoError("connection closed or timed out reading a line");
  }
}

Result<TestResponse> TestConnection::Read(std::chrono::milliseconds timeout,
                                          const std::function<void(std::string_view)>& on_chunk, bool head) {
  const auto deadline = Clock::now() + timeout;
  TestResponse response;
  K3_ASSIGN_OR_RETURN(std::string status_line, ReadLine(deadline));
  if (status_line.size() < 12 || !status_line.starts_with("HTTP/1.1 ")) {
    return DataLoss("bad status line '{}'", status_line);
  }
  response.status = std::stoi(status_line.substr(9, 3));
  while (true) {
    K3_ASSIGN_OR_RETURN(std::string line, ReadLine(deadline));
    if (line.empty()) break;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) return DataLoss("bad header line '{}'", line);
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    size_t v = colon + 1;
    while (v < line.size() && line[v] == ' ') ++v;
    response.headers[name] = line.substr(v);
  }
  if (head) return response;
  if (response.headers["transfer-encoding"] == "chunked") {
    while (true) {
      K3_ASSIGN_OR_RETURN(std::string size_line, ReadLine(deadline));
      const size_t size = std::stoul(size_line, nullptr, 16);
      if (!Fill(size + 2, deadline)) return IoError("connection closed inside a chunk");
      std::string chunk = buffer_.substr(0, size);
      buffer_.erase(0, size + 2);
      if (size == 0) break;
      if (on_chunk) on_chunk(chunk);
      response.body += chunk;
      response.chunks.push_back(std::move(chunk));
    }
  } else if (response.headers.count("content-length")) {
    const size_t length = std::stoul(response.headers["content-length"]);
    if (!Fill(length, deadline)) return IoError("connection closed inside the body");
    response.body = buffer_.substr(0, length);
    buffer_.erase(0, length);
  }
  return response;
}

Result<std::string> TestConnection::ReadUntilClosed(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  char tmp[65536];
  while (Clock::now() < deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd p{fd_, POLLIN, 0};
    if (!Pending() && ::poll(&p, 1, static_cast<int>(std::max<int64_t>(left, 1))) <= 0) continue;
    const ssize_t got = RecvSome(tmp, sizeof(tmp));
    if (got <= 0) return std::exchange(buffer_, {});
    buffer_.append(tmp, static_cast<size_t>(got));
  }
  return IoError("the connection was still open after {} ms", timeout.count());
}

bool TestConnection::WaitClosed(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  char tmp[4096];
  while (Clock::now() < deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd p{fd_, POLLIN, 0};
    if (!Pending() && ::poll(&p, 1, static_cast<int>(std::max<int64_t>(left, 1))) <= 0) continue;
    const ssize_t got = RecvSome(tmp, sizeof(tmp));
    if (got <= 0) return true;
  }
  return false;
}

Result<TestResponse> Fetch(uint16_t port, std::string_view method, std::string_view path,
                           std::string_view body, const std::vector<std::string>& extra_headers) {
  K3_ASSIGN_OR_RETURN(TestConnection conn, TestConnection::Connect(port));
  K3_RETURN_IF_ERROR(conn.Send(BuildRequest(method, path, body, extra_headers)));
  return conn.Read();
}

}  // namespace k3::server::testing
