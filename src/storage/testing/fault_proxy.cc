// FaultProxy (fault_proxy.h): blocking sockets driven by poll with 100 ms timeouts.
#include "src/storage/testing/fault_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>

namespace k3::storage::testing {
namespace {

bool WriteAllBytes(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

Result<std::unique_ptr<FaultProxy>> FaultProxy::Start(int upstream_port) {
  auto proxy = std::unique_ptr<FaultProxy>(new FaultProxy());
  proxy->upstream_port_ = upstream_port;
  proxy->listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (proxy->listen_fd_ < 0) return IoError("socket: {}", std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(proxy->listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(proxy->listen_fd_, 64) != 0) {
    return IoError("bind/listen: {}", std::strerror(errno));
  }
  socklen_t len = sizeof(addr);
  ::getsockname(proxy->listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  proxy->port_ = ntohs(addr.sin_port);
  proxy->acceptor_ = std::thread([p = proxy.get()] { p->AcceptLoop(); });
  return proxy;
}

FaultProxy::~FaultProxy() {
  stop_ = true;
  if (acceptor_.joinable()) acceptor_.join();
  std::lock_guard<std::mutex> lock(mu_);
  for (std::thread& handler : handlers_) handler.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

void FaultProxy::AcceptLoop() {
  while (!stop_) {
    pollfd pfd{listen_fd_, POLLIN, 0};
    if (::poll(&pfd, 1, 100) <= 0) continue;
    const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    ++connections_;
    std::lock_guard<std::mutex> lock(mu_);
    handlers_.emplace_back([this, client] { Serve(client); });
  }
}

void FaultProxy::Serve(int client) {
  int fail = fail_next_.load();
  while (fail > 0 && !fail_next_.compare_exchange_weak(fail, fail - 1)) {
  }
  if (fail > 0) {
    ++failed_;
    Answer503(client);
  } else {
    Forward(client, drop_after_.exchange(-1));
  }
  ::close(client);
}

void FaultProxy::Answer503(int client) {
  // Read the request head (and a body up to its Content-Length unless the client waits for 100-continue).
  std::string request;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < 65536 &&
         std::chrono::steady_clock::now() < deadline && !stop_) {
    pollfd pfd{client, POLLIN, 0};
    if (::poll(&pfd, 1, 100) <= 0) continue;
    char buffer[4096];
    const ssize_t n = ::recv(client, buffer, sizeof(buffer), 0);
    if (n <= 0) return;
    request.append(buffer, static_cast<size_t>(n));
  }
  const std::string body =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code><Message>Please reduce your "
      "request rate.</Message></Error>";
  const std::string reply = "HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nContent-Length: " +
                            std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  WriteAllBytes(client, reply.data(), reply.size());
  ::shutdown(client, SHUT_WR);
}

void FaultProxy::Forward(int client, long long drop_after) {
  const int upstream = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(upstream_port_));
  if (upstream < 0 || ::connect(upstream, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (upstream >= 0) ::close(upstream);
    return;
  }
  long long sent_down = 0;
  // Idle connections end after 30 s without traffic (every client request here is much shorter).
  auto last_activity = std::chrono::steady_clock::now();
  while (!stop_ && std::chrono::steady_clock::now() - last_activity < std::chrono::seconds(30)) {
    pollfd fds[2] = {{client, POLLIN, 0}, {upstream, POLLIN, 0}};
    if (::poll(fds, 2, 100) <= 0) continue;
    last_activity = std::chrono::steady_clock::now();
    char buffer[16384];
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t n = ::recv(client, buffer, sizeof(buffer), 0);
      if (n <= 0 || !WriteAllBytes(upstream, buffer, static_cast<size_t>(n))) break;
    }
    if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = ::recv(upstream, buffer, sizeof(buffer), 0);
      if (n <= 0) break;
      if (drop_after >= 0 && sent_down + n >= drop_after) {
        WriteAllBytes(client, buffer, static_cast<size_t>(drop_after - sent_down));
        ++dropped_;
        // A reset, as a broken network gives it: SO_LINGER 0 makes close() send RST.
        linger hard{1, 0};
        ::setsockopt(client, SOL_SOCKET, SO_LINGER, &hard, sizeof(hard));
        break;
      }
      sent_down += n;
      if (!WriteAllBytes(client, buffer, static_cast<size_t>(n))) break;
    }
  }
  ::close(upstream);
}

}  // namespace k3::storage::testing
