// CannedHttpServer: a loopback stand-in for a cloud's token service (AWS STS, Microsoft Entra ID) in unit
// tests: answers each connection, in order, with the next canned (status, body) and records the requests
// it was sent (request line, headers and body). Header-only, so tests that link only k3_storage can use
// it. Every wait is bounded (10 s polls); the destructor closes the socket and joins the thread.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace k3::storage::testing {

class CannedHttpServer {
 public:
  struct Request {
    std::string head;  // request line and headers
    std::string body;
  };

  CannedHttpServer(std::vector<std::pair<int, std::string>> replies, std::string content_type)
      : replies_(std::move(replies)), content_type_(std::move(content_type)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len), 0);
    EXPECT_EQ(::listen(fd_, 8), 0);
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~CannedHttpServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  CannedHttpServer(const CannedHttpServer&) = delete;
  CannedHttpServer& operator=(const CannedHttpServer&) = delete;

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<Request> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }
  std::vector<std::string> bodies() {
    std::vector<std::string> out;
    for (const Request& request : requests()) out.push_back(request.body);
    return out;
  }

 private:
  void Serve() {
    for (const auto& [status, reply] : replies_) {  // one connection per canned reply
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 10'000) <= 0) return;
      const int client = ::accept(fd_, nullptr, nullptr);
      if (client < 0) return;
      std::string request;
      char buf[4096];
      size_t body_at = std::string::npos, length = 0;
      while (body_at == std::string::npos || request.size() < body_at + length) {
        pollfd c{client, POLLIN, 0};
        if (::poll(&c, 1, 10'000) <= 0) break;
        const ssize_t n = ::read(client, buf, sizeof(buf));
        if (n <= 0) break;
        request.append(buf, static_cast<size_t>(n));
        if (body_at == std::string::npos && (body_at = request.find("\r\n\r\n")) != std::string::npos) {
          body_at += 4;
          const size_t cl = request.find("Content-Length: ");
          if (cl != std::string::npos) length = std::stoul(request.substr(cl + 16));
        }
      }
      {
        std::lock_guard lock(mu_);
        if (body_at == std::string::npos) {
          requests_.push_back({request, ""});
        } else {
          requests_.push_back({request.substr(0, body_at), request.substr(body_at)});
        }
      }
      const std::string answer =
          "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: " + content_type_ +
          "\r\nConnection: close\r\nContent-Length: " + std::to_string(reply.size()) + "\r\n\r\n" + reply;
      (void)!::write(client, answer.data(), answer.size());
      ::close(client);
    }
  }

  std::vector<std::pair<int, std::string>> replies_;
  std::string content_type_;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<Request> requests_;
};

}  // namespace k3::storage::testing
