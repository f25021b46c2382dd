// S3Store when the network misbehaves below HTTP: nobody listening (refused, retried, then a clear error)
// and a server that accepts and never answers (the low-speed limit ends each attempt: no hang).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "src/storage/s3_store.h"

namespace k3::storage {
namespace {

// A loopback listening socket; `accept_and_hold` takes connections and never answers them.
class SilentServer {
 public:
  SilentServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd pfd{fd_, POLLIN, 0};
        if (::poll(&pfd, 1, 50) <= 0) continue;
        const int client = ::accept(fd_, nullptr, nullptr);
        if (client >= 0) {
          held_.push_back(client);  // only this thread touches held_ until the destructor joins it
          ++accepted_;
        }
      }
    });
  }
  ~SilentServer() {
    stop_ = true;
    thread_.join();
    for (int fd : held_) ::close(fd);
    ::close(fd_);
  }
  int port() const { return port_; }
  size_t accepted() const { return accepted_; }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::vector<int> held_;
  std::atomic<size_t> accepted_{0};
  std::thread thread_;
};

std::unique_ptr<S3Store> StoreAt(int port, int attempts) {
  S3Options options;
  options.endpoint = "http://127.0.0.1:" + std::to_string(port);
  options.credentials = AwsCredentials{"AKID", "s3cr3t-value", "", "env AWS_ACCESS_KEY_ID"};
  options.retry.max_attempts = attempts;
  options.retry.base_delay = std::chrono::milliseconds(5);
  options.connect_timeout_s = 2;
  options.low_speed_time_s = 1;
  auto store = S3Store::Create(*ParseObjectUri("s3://bucket/prefix"), options);
  EXPECT_TRUE(store.ok());
  return std::move(store).value();
}

TEST(S3TransportTest, RefusedConnectionsAreRetriedThenAClearError) {
  int port = 0;
  {
    SilentServer closed;  // a port that was free a moment ago and has nobody listening now
    port = closed.port();
  }
  auto store = StoreAt(port, 3);
  const auto start = std::chrono::steady_clock::now();
  auto stat = store->Stat("config.json");
  ASSERT_FALSE(stat.ok());
  const std::string& message = stat.status().message();
  EXPECT_NE(message.find("connection refused"), std::string::npos) << message;
  EXPECT_NE(message.find("s3://bucket/prefix/config.json"), std::string::npos) << message;
  EXPECT_NE(message.find("gave up after 3 attempts"), std::string::npos) << message;
  EXPECT_EQ(message.find("s3cr3t-value"), std::string::npos) << message;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
}

TEST(S3TransportTest, AServerThatNeverAnswersTimesOutInsteadOfHanging) {
  SilentServer server;
  auto store = StoreAt(server.port(), 2);
  const auto start = std::chrono::steady_clock::now();
  std::vector<uint8_t> buffer(100);
  const Status status = store->ReadRange("shard", 0, buffer);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("timed out"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("gave up after 2 attempts"), std::string::npos) << status.message();
  EXPECT_EQ(server.accepted(), 2u);
  EXPECT_LT(seconds, 10.0);
}

}  // namespace
}  // namespace k3::storage
