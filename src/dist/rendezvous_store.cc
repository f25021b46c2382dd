// StoreServer and StoreClient over POSIX TCP sockets (rendezvous_store.h).
#include "src/dist/rendezvous_store.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>

namespace k3::dist {
namespace {

using Clock = std::chrono::steady_clock;

// Reads exactly n bytes before `deadline`; false on EOF, error, timeout, or when `stop` turns true.
bool ReadFull(int fd, char* out, size_t n, Clock::time_point deadline,
              const std::atomic<bool>* stop = nullptr) {
  size_t got = 0;
  while (got < n) {
    if (stop != nullptr && stop->load()) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 100)));
    if (ready < 0 && errno != EINTR) return false;
    if (ready <= 0) continue;
    const ssize_t r = recv(fd, out + got, n - got, 0);
    if (r == 0) return false;
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return false;
    }
    got += static_cast<size_t>(r);
  }
  return true;
}

bool WriteFull(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t w = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    sent += static_cast<size_t>(w);
  }
  return true;
}

// One frame body, or an error (EOF, timeout, a length above the limit).
Result<Frame> ReadFrame(int fd, Clock::time_point deadline, const std::atomic<bool>* stop = nullptr) {
  uint32_t length = 0;
  if (!ReadFull(fd, reinterpret_cast<char*>(&length), 4, deadline, stop))
    return IoError("the connection closed or timed out");
  if (length == 0 || length > kMaxFrameBytes) return DataLoss("store frame of {} bytes refused", length);
  std::string body(length, '\0');
  if (!ReadFull(fd, body.data(), length, deadline, stop))
    return IoError("the connection closed inside a frame");
  return DecodeFrameBody(body);
}

constexpr auto kForever = std::chrono::hours(24 * 365);

}  // namespace

// ---------------------------------------------------------------------------------------------------
// Server.

struct StoreServer::Impl {
  int listen_fd = -1;
  int port = 0;
  std::atomic<bool> stop{false};
  std::thread acceptor;
  mutable std::mutex mu;
  std::condition_variable changed;
  std::map<std::string, std::string> data;
  std::vector<int> lost;
  std::vector<std::thread> handlers;
  std::vector<int> fds;
  std::string nonce;

  void Accept() {
    while (!stop.load()) {
      pollfd p{listen_fd, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      const int fd = accept(listen_fd, nullptr, nullptr);
      if (fd < 0) continue;
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      std::lock_guard<std::mutex> lock(mu);
      fds.push_back(fd);
      handlers.emplace_back([this, fd] { Serve(fd); });
    }
  }

  // Waits until every key exists or the deadline; returns the first missing key ("" when all exist).
  std::string WaitFor(const std::vector<std::string>& keys, Clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      std::string missing;
      for (const std::string& k : keys) {
        if (data.count(k) == 0) {
          missing = k;
          break;
        }
      }
      if (missing.empty() || stop.load() || Clock::now() >= deadline) return missing;
      changed.wait_until(lock, std::min(deadline, Clock::now() + std::chrono::milliseconds(100)));
    }
  }

  void Serve(int fd) {
    int rank = -1;
    for (;;) {
      auto request = ReadFrame(fd, Clock::now() + kForever, &stop);
      if (!request.ok()) {
        if (request.status().code() == StatusCode::kDataLoss) {
          Frame error{FrameKind::kError, {request.status().message()}};
          (void)WriteFull(fd, EncodeFrame(error));
        }
        break;
      }
      Frame reply{FrameKind::kOk, {}};
      const auto deadline = Clock::now() + std::chrono::milliseconds(request->timeout_ms);
      switch (request->kind) {
        case FrameKind::kSet: {
          const std::string& key = request->fields[0];
          if (key.rfind("k3/joined/", 0) == 0) rank = std::atoi(key.c_str() + 10);
          std::lock_guard<std::mutex> lock(mu);
          data[key] = request->fields[1];
          changed.notify_all();
          break;
        }
        case FrameKind::kGet: {
          const std::string missing = WaitFor({request->fields[0]}, deadline);
          if (!missing.empty()) {
            reply = Frame{FrameKind::kTimeout, {missing}};
          } else {
            std::lock_guard<std::mutex> lock(mu);
            reply = Frame{FrameKind::kValue, {data.at(request->fields[0])}};
          }
          break;
        }
        case FrameKind::kWait: {
          const std::string missing = WaitFor(request->fields, deadline);
          if (!missing.empty()) reply = Frame{FrameKind::kTimeout, {missing}};
          break;
        }
        default:
          reply = Frame{FrameKind::kError, {"the store accepts set, get and wait requests only"}};
      }
      if (!WriteFull(fd, EncodeFrame(reply)) || reply.kind == FrameKind::kError) break;
    }
    shutdown(fd, SHUT_RDWR);  // the peer sees the end now; the descriptor is closed with the server
    std::lock_guard<std::mutex> lock(mu);
    if (rank >= 0 && !stop.load()) lost.push_back(rank);
  }
};

StoreServer::StoreServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<StoreServer>> StoreServer::Start(int port) {
  const int fd = socket(AF_INET6, SOCK_STREAM, 0);
  const bool v6 = fd >= 0;
  const int listen_fd = v6 ? fd : socket(AF_INET, SOCK_STREAM, 0);
  if (listen_fd < 0) return IoError("rendezvous store: cannot create a socket: {}", std::strerror(errno));
  const int one = 1, zero = 0;
  setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int rc;
  if (v6) {
    setsockopt(listen_fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));  // IPv4 too
    sockaddr_in6 addr{};
    addr.sin6_family = AF_INET6;
    addr.sin6_addr = in6addr_any;
    addr.sin6_port = htons(static_cast<uint16_t>(port));
    rc = bind(listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  } else {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    rc = bind(listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  }
  if (rc != 0 || listen(listen_fd, 256) != 0) {
    const int err = errno;
    close(listen_fd);
    if (err == EADDRINUSE) {
      return InvalidArgument(
          "--master-port {} is in use on this machine (another k3 group or program listens there); choose a "
          "free port with --master-port",
          port);
    }
    return IoError("rendezvous store: cannot listen on port {}: {}", port, std::strerror(err));
  }
  auto impl = std::make_unique<Impl>();
  impl->listen_fd = listen_fd;
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  getsockname(listen_fd, reinterpret_cast<sockaddr*>(&bound), &len);
  impl->port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                 : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  impl->nonce = std::to_string(std::random_device{}()) + "-" + std::to_string(getpid());
  impl->data["k3/server-nonce"] = impl->nonce;
  Impl* raw = impl.get();
  impl->acceptor = std::thread([raw] { raw->Accept(); });
  return std::unique_ptr<StoreServer>(new StoreServer(std::move(impl)));
}

StoreServer::~StoreServer() {
  impl_->stop = true;
  impl_->changed.notify_all();
  if (impl_->acceptor.joinable()) impl_->acceptor.join();
  std::vector<std::thread> handlers;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    for (int fd : impl_->fds) shutdown(fd, SHUT_RDWR);
    handlers.swap(impl_->handlers);
  }
  for (std::thread& t : handlers) t.join();
  for (int fd : impl_->fds) close(fd);
  close(impl_->listen_fd);
}

int StoreServer::port() const { return impl_->port; }

const std::string& StoreServer::nonce() const { return impl_->nonce; }

std::vector<int> StoreServer::LostRanks() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->lost;
}

// ---------------------------------------------------------------------------------------------------
// Client.

Result<std::unique_ptr<StoreClient>> StoreClient::Connect(const std::string& host, int port, int rank,
                                                          std::chrono::milliseconds timeout) {
  const std::string where = host + ":" + std::to_string(port);
  const auto deadline = Clock::now() + timeout;
  std::mt19937 jitter(std::random_device{}());
  auto backoff = std::chrono::milliseconds(50);
  std::string last_error = "no attempt";
  for (int attempt = 0;; ++attempt) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int gai = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
    if (gai != 0) {
      last_error = gai_strerror(gai);  // the leader's DNS name may not resolve until its pod is up
    } else {
      for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
        const int fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0) continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
          freeaddrinfo(found);
          const int one = 1;
          setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          auto client = std::unique_ptr<StoreClient>(new StoreClient(fd, where));
          K3_RETURN_IF_ERROR(client->Set("k3/joined/" + std::to_string(rank), "1"));
          return client;
        }
        last_error = std::strerror(errno);
        close(fd);
      }
      freeaddrinfo(found);
    }
    if (Clock::now() + backoff >= deadline) break;
    const double scale = std::uniform_real_distribution<double>(0.75, 1.25)(jitter);
    std::this_thread::sleep_for(std::chrono::duration_cast<std::chrono::milliseconds>(backoff * scale));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
  }
  return IoError(
      "no rendezvous store answered at {} within {} s (last error: {}); is rank 0 (node 0) running, and are "
      "--master-addr / --master-port (or LWS_LEADER_ADDRESS) right?",
      where, timeout.count() / 1000.0, last_error);
}

StoreClient::~StoreClient() { close(fd_); }

Result<Frame> StoreClient::Call(const Frame& request, std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!WriteFull(fd_, EncodeFrame(request)))
    return IoError("the rendezvous store at {} closed the connection (rank 0 is gone)", where_);
  auto reply = ReadFrame(fd_, Clock::now() + timeout + std::chrono::seconds(10));
  if (!reply.ok()) return reply.status().WithPrefix("rendezvous store at " + where_);
  if (reply->kind == FrameKind::kError)
    return Internal("rendezvous store at {}: {}", where_, reply->fields.empty() ? "" : reply->fields[0]);
  return reply;
}

Status StoreClient::Set(const std::string& key, const std::string& value) {
  K3_ASSIGN_OR_RETURN(Frame reply, Call(Frame{FrameKind::kSet, {key, value}}, std::chrono::seconds(0)));
  (void)reply;
  return OkStatus();
}

Result<std::string> StoreClient::Get(const std::string& key, std::chrono::milliseconds timeout) {
  Frame request{
      FrameKind::kGet, {key}, static_cast<uint32_t>(std::min<int64_t>(timeout.count(), UINT32_MAX))};
  K3_ASSIGN_OR_RETURN(Frame reply, Call(request, timeout));
  if (reply.kind == FrameKind::kTimeout)
    return NotFound("'{}' did not appear within {} ms", key, timeout.count());
  if (reply.kind != FrameKind::kValue || reply.fields.size() != 1)
    return DataLoss("rendezvous store at {}: unexpected reply", where_);
  return std::move(reply.fields[0]);
}

Status StoreClient::Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  Frame request{FrameKind::kWait, keys,
                static_cast<uint32_t>(std::min<int64_t>(timeout.count(), UINT32_MAX))};
  K3_ASSIGN_OR_RETURN(Frame reply, Call(request, timeout));
  if (reply.kind == FrameKind::kTimeout) {
    return NotFound("'{}' did not appear within {} ms", reply.fields.empty() ? "?" : reply.fields[0],
                    timeout.count());
  }
  return OkStatus();
}

bool StoreClient::Connected() {
  std::lock_guard<std::mutex> lock(mu_);
  pollfd p{fd_, POLLIN, 0};
  if (poll(&p, 1, 0) <= 0) return true;  // nothing pending: open
  char byte;
  return recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

}  // namespace k3::dist
