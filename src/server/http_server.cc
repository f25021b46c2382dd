// HttpServer on Boost.Beast/Asio: acceptor, per-connection sessions on strands, exchanges, deadlines,
// graceful drain. The only translation unit that includes Beast or Asio.
#include <utility>  // Boost 1.74's asio awaitable.hpp forgets it (toolchain.md).

#include "src/server/http_server.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <exception>
#include <future>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "src/server/auth.h"
#include "src/server/cors.h"
#include "src/server/error_json.h"
#include "src/server/http_format.h"
#include "src/server/request_id.h"
#include "src/server/tls_config.h"

namespace k3::server {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using TlsStream = net::ssl::stream<tcp::socket>;
using Clock = std::chrono::steady_clock;
using ErrorCode = boost::system::error_code;

class Session;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// State shared by the acceptor, the sessions and the HttpServer facade.
struct Core {
  ServerOptions options;
  Router router;
  CorsPolicy cors;
  std::optional<net::ssl::context> tls;  // set: every connection is TLS
  std::atomic<bool> shutting_down{false};
  std::atomic<int64_t> active_exchanges{0};
  std::atomic<int64_t> connections{0};
  std::mutex sessions_mu;
  std::unordered_map<Session*, std::weak_ptr<Session>> sessions;
  std::mutex drain_mu;
  std::condition_variable drain_cv;

  void ExchangeEnded() {
    if (active_exchanges.fetch_sub(1) == 1) {
      std::lock_guard<std::mutex> lock(drain_mu);
      drain_cv.notify_all();
    }
  }
  std::shared_ptr<Session> OldestIdleSession();
  std::vector<std::shared_ptr<Session>> LiveSessions() {
    std::vector<std::shared_ptr<Session>> out;
    std::lock_guard<std::mutex> lock(sessions_mu);
    for (auto& [ptr, weak] : sessions) {
      if (auto s = weak.lock()) out.push_back(std::move(s));
    }
    return out;
  }
};

class ExchangeImpl;

// One connection: the HTTP state machine, written once for every stream type. The few operations that
// touch the stream (wait, read, write, cancel, close) are virtual and implemented by StreamSession<Stream>
// for a plain TCP socket and for TLS over it.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(net::any_io_executor executor, Core* core)
      : executor_(std::move(executor)), timer_(executor_), core_(core) {
    core_->connections.fetch_add(1);
  }
  virtual ~Session() {
    if (!closed_) core_->connections.fetch_sub(1);
    std::lock_guard<std::mutex> lock(core_->sessions_mu);
    core_->sessions.erase(this);
  }

  const net::any_io_executor& executor() const { return executor_; }

  void Start() {
    {
      std::lock_guard<std::mutex> lock(core_->sessions_mu);
      core_->sessions.emplace(this, weak_from_this());
    }
    StartStream();
  }

  // Drain: idle connections close now, busy ones after their exchange.
  void OnShutdown() {
    keep_alive_ = false;
    if (state_ == State::kNone && !reading_) Close();
  }
  void ForceClose() { Close(); }
  // Out of descriptors: an idle keep-alive connection is closed to make room for a new one (clients
  // reconnect; nginx and Go's server drop idle connections too). False when it was no longer idle.
  bool CloseIfIdle() {
    if (idle_since_ns_.load() == 0 || closed_) return false;
    Close();
    return true;
  }
  // When it started waiting for its next request (steady clock ns), 0 when not idle.
  int64_t idle_since_ns() const { return idle_since_ns_.load(); }

  // Exchange operations, run on the strand. `serial` identifies the exchange they belong to.
  void DoRespond(uint64_t serial, HttpResponse response);
  void DoStartEvents(uint64_t serial, int status, HeaderList headers);
  void DoSendEvents(uint64_t serial, std::vector<std::string> payloads);
  void DoEndEvents(uint64_t serial);
  void DoOnClientGone(uint64_t serial, std::function<void()> callback);
  void DoAbandon(uint64_t serial);

 protected:
  enum class State { kNone, kHandling, kStreaming, kEnded };

  // Stream operations. Each completion calls back into the state machine below.
  virtual void StartStream() = 0;      // then WaitForRequest() (TLS: after the handshake)
  virtual void AsyncWaitIdle() = 0;    // a keep-alive connection waits for its next request: OnIdleReady
  virtual void AsyncReadHeader() = 0;  // OnHeader
  virtual void AsyncReadBody() = 0;    // OnBody
  virtual bool WriteNow(std::string_view bytes) = 0;  // blocking (100 Continue); false on error
  virtual void AsyncWatch() = 0;                      // one read into buffer_: OnWatch
  virtual void AsyncWrite() = 0;                      // out_inflight_: OnWrite
  virtual void CancelReads() = 0;                     // the pending read ends with operation_aborted
  virtual void AsyncLingerClose() = 0;                // stop sending, let the client read, then Close()
  virtual void CloseStream() = 0;

  std::shared_ptr<Session> self() { return shared_from_this(); }

  void WaitForRequest();
  void OnIdleReady(ErrorCode ec);
  void ReadHeader();
  void OnHeader(ErrorCode ec);
  void OnBody(ErrorCode ec);
  void Dispatch();
  void Watch();
  void OnWatch(ErrorCode ec, size_t n);
  void Queue(std::string_view bytes);
  void WriteMore();
  void OnWrite(ErrorCode ec);
  void FinishExchange();
  void EndAccounting();
  void FailRequest(int status, std::string_view message);  // error answer, then close
  void LingerClose();
  void Close();
  void ArmTimer(std::chrono::milliseconds d);
  void CancelTimer() { timer_.expires_at(Clock::time_point::max()); }
  bool SerialIsCurrent(uint64_t serial) const { return serial == serial_ && state_ != State::kNone; }

  net::any_io_executor executor_;
  net::steady_timer timer_;
  Core* core_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  bool reading_ = false;  // a header or body read is pending
  bool closed_ = false;
  bool lingering_ = false;
  bool keep_alive_ = true;

  // Writes: bytes queued while one write is in flight go out with the next one.
  std::string out_pending_;
  std::string out_inflight_;
  bool writing_ = false;

  // The current exchange.
  State state_ = State::kNone;
  uint64_t serial_ = 0;
  std::string request_id_;
  bool counted_ = false;       // counted in core_->active_exchanges
  bool watching_ = false;      // a disconnect-watch read is pending
  bool head_request_ = false;  // the current request is HEAD: answers carry no body
  bool http10_ = false;        // the current request is HTTP/1.0: no chunked encoding
  bool resume_after_watch_ = false;
  bool client_gone_ = false;
  std::function<void()> gone_callback_;
  HeaderList cors_headers_;  // CORS headers every answer to the current request carries
  std::atomic<int64_t> idle_since_ns_{0};
};

// The stream operations for a plain socket (tcp::socket) or TLS over one (TlsStream).
template <class Stream>
class StreamSession final : public Session {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, tcp::socket>;

  template <class... Args>
  StreamSession(Core* core, tcp::socket socket, Args&... args)
      : Session(socket.get_executor(), core), stream_(std::move(socket), args...) {}

 private:
  tcp::socket& socket() { return beast::get_lowest_layer(stream_); }

  void StartStream() override {
    if constexpr (kTls) {
      // The handshake counts as part of the first request's header: a silent client is dropped at the
      // header deadline; a plain-HTTP client fails the handshake and is closed.
      reading_ = true;
      ArmTimer(core_->options.header_timeout);
      stream_.async_handshake(net::ssl::stream_base::server, [keep = self(), this](ErrorCode ec) {
        reading_ = false;
        if (ec) {
          spdlog::debug("TLS handshake failed: {}", ec.message());
          Close();
          return;
        }
        WaitForRequest();
      });
    } else {
      WaitForRequest();
    }
  }

  void AsyncWaitIdle() override {
    if constexpr (kTls) {
      // Readability of the socket says nothing about bytes OpenSSL or Asio already hold: read instead.
      stream_.async_read_some(buffer_.prepare(4096), [keep = self(), this](ErrorCode ec, size_t n) {
        if (n > 0) {
          buffer_.commit(n);
          ec = {};
        }
        OnIdleReady(ec);
      });
    } else {
      // Wait for readability without a buffer: an idle keep-alive connection costs its socket only.
      socket().async_wait(tcp::socket::wait_read, [keep = self(), this](ErrorCode ec) { OnIdleReady(ec); });
    }
  }

  void AsyncReadHeader() override {
    http::async_read_header(stream_, buffer_, *parser_,
                            [keep = self(), this](ErrorCode ec, size_t) { OnHeader(ec); });
  }
  void AsyncReadBody() override {
    http::async_read(stream_, buffer_, *parser_, [keep = self(), this](ErrorCode ec, size_t) { OnBody(ec); });
  }
  bool WriteNow(std::string_view bytes) override {
    ErrorCode ec;
    net::write(stream_, net::buffer(bytes), ec);
    return !ec;
  }
  void AsyncWatch() override {
    stream_.async_read_some(buffer_.prepare(4096),
                            [keep = self(), this](ErrorCode ec, size_t n) { OnWatch(ec, n); });
  }
  void AsyncWrite() override {
    net::async_write(stream_, net::buffer(out_inflight_),
                     [keep = self(), this](ErrorCode ec, size_t) { OnWrite(ec); });
  }
  void CancelReads() override {
    ErrorCode ignored;
    socket().cancel(ignored);
  }

  void AsyncLingerClose() override {
    if constexpr (kTls) {
      // close_notify, then wait (bounded by the timer) for the client's: it has read the answer by then.
      stream_.async_shutdown([keep = self(), this](ErrorCode) { Close(); });
    } else {
      ErrorCode ignored;
      socket().shutdown(tcp::socket::shutdown_send, ignored);
      DrainAndClose(std::make_shared<std::array<char, 16384>>());
    }
  }

  // Reads and drops what the client still sends until it closes or the deadline passes. Each pending
  // read holds the session only through its handler, so a handler destroyed unrun (io_context stopped)
  // frees the session: no self-referencing loop object.
  void DrainAndClose(std::shared_ptr<std::array<char, 16384>> drain) {
    socket().async_read_some(net::buffer(*drain), [keep = self(), this, drain](ErrorCode read_ec, size_t) {
      if (read_ec || closed_) {
        Close();
        return;
      }
      DrainAndClose(drain);
    });
  }

  void CloseStream() override {
    ErrorCode ignored;
    socket().shutdown(tcp::socket::shutdown_both, ignored);
    socket().close(ignored);
  }

  Stream stream_;
};

std::shared_ptr<Session> Core::OldestIdleSession() {
  std::shared_ptr<Session> oldest;
  std::lock_guard<std::mutex> lock(sessions_mu);
  for (auto& [ptr, weak] : sessions) {
    const int64_t since = ptr->idle_since_ns();
    if (since == 0 || (oldest && oldest->idle_since_ns() <= since)) continue;
    if (auto s = weak.lock()) oldest = std::move(s);
  }
  return oldest;
}

class ExchangeImpl : public Exchange {
 public:
  ExchangeImpl(std::shared_ptr<Session> session, uint64_t serial, HttpRequest request)
      : session_(std::move(session)), serial_(serial), request_(std::move(request)) {}
  ~ExchangeImpl() override {
    net::post(session_->executor(), [s = session_, serial = serial_] { s->DoAbandon(serial); });
  }
  const HttpRequest& request() const override { return request_; }
  void Respond(HttpResponse response) override {
    net::post(session_->executor(), [s = session_, serial = serial_, r = std::move(response)]() mutable {
      s->DoRespond(serial, std::move(r));
    });
  }
  void StartEvents(int status, HeaderList headers) override {
    net::post(session_->executor(),
              [s = session_, serial = serial_, status, h = std::move(headers)]() mutable {
                s->DoStartEvents(serial, status, std::move(h));
              });
  }
  void SendEvents(std::vector<std::string> payloads) override {
    net::post(session_->executor(), [s = session_, serial = serial_, p = std::move(payloads)]() mutable {
      s->DoSendEvents(serial, std::move(p));
    });
  }
  void EndEvents() override {
    net::post(session_->executor(), [s = session_, serial = serial_] { s->DoEndEvents(serial); });
  }
  void OnClientGone(std::function<void()> callback) override {
    net::post(session_->executor(), [s = session_, serial = serial_, cb = std::move(callback)]() mutable {
      s->DoOnClientGone(serial, std::move(cb));
    });
  }
  void Post(std::function<void()> fn) override { net::post(session_->executor(), std::move(fn)); }

 private:
  std::shared_ptr<Session> session_;
  uint64_t serial_;
  HttpRequest request_;
};

void Session::ArmTimer(std::chrono::milliseconds d) {
  timer_.expires_after(d);
  timer_.async_wait([self = shared_from_this()](ErrorCode ec) {
    if (ec == net::error::operation_aborted) return;
    // A re-armed timer may still deliver an earlier expiry: only a deadline that has passed closes.
    if (self->timer_.expiry() > Clock::now()) return;
    self->Close();
  });
}

void Session::WaitForRequest() {
  if (closed_) return;
  if (core_->shutting_down.load() || !keep_alive_) {
    LingerClose();
    return;
  }
  if (buffer_.size() > 0) {  // a pipelined request is already here
    ReadHeader();
    return;
  }
  ArmTimer(core_->options.idle_timeout);
  idle_since_ns_.store(std::max<int64_t>(1, NowNs()));
  AsyncWaitIdle();
}

void Session::OnIdleReady(ErrorCode ec) {
  idle_since_ns_.store(0);
  if (closed_) return;
  if (ec) {
    Close();
    return;
  }
  ReadHeader();
}

void Session::ReadHeader() {
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(core_->options.max_header_bytes));
  parser_->body_limit(core_->options.max_body_bytes);
  reading_ = true;
  ArmTimer(core_->options.header_timeout);
  AsyncReadHeader();
}

bool IsHttpError(const ErrorCode& ec) {
  return ec.category() == http::make_error_code(http::error::bad_target).category();
}

void Session::OnHeader(ErrorCode ec) {
  reading_ = false;
  if (closed_) return;
  if (ec == http::error::body_limit) {
    return FailRequest(
        413, fmt::format("request body is larger than the limit of {} bytes", core_->options.max_body_bytes));
  }
  if (ec == http::error::header_limit) {
    return FailRequest(431, fmt::format("request header is larger than the limit of {} bytes",
                                        core_->options.max_header_bytes));
  }
  if (ec == http::error::end_of_stream || (ec && !IsHttpError(ec))) return Close();
  if (ec) return FailRequest(400, fmt::format("malformed HTTP request: {}", ec.message()));
  if (parser_->is_done()) return Dispatch();
  auto& header = parser_->get();
  auto expect = header[http::field::expect];
  if (beast::iequals(expect, "100-continue")) {
    if (!WriteNow("HTTP/1.1 100 Continue\r\n\r\n")) return Close();
  }
  reading_ = true;
  ArmTimer(core_->options.body_timeout);
  AsyncReadBody();
}

void Session::OnBody(ErrorCode ec) {
  reading_ = false;
  if (closed_) return;
  if (ec == http::error::body_limit) {
    return FailRequest(
        413, fmt::format("request body is larger than the limit of {} bytes", core_->options.max_body_bytes));
  }
  if (ec && IsHttpError(ec) && ec != http::error::end_of_stream && ec != http::error::partial_message) {
    return FailRequest(400, fmt::format("malformed HTTP request: {}", ec.message()));
  }
  if (ec) return Close();
  Dispatch();
}

void Session::Dispatch() {
  CancelTimer();
  auto& message = parser_->get();
  HttpRequest request;
  request.method = std::string(message.method_string());
  request.target = std::string(message.target());
  request.path = request.target.substr(0, request.target.find('?'));
  request.headers.reserve(8);
  for (const auto& field : message) {
    std::string name(field.name_string());
    std::transform(name.begin(), name.end(), name.begin(),
                   [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; });
    request.headers.emplace_back(std::move(name), std::string(field.value()));
  }
  request.body = std::move(message.body());
  request.received = Clock::now();
  request.request_id = RequestIdFor(request.Header("x-request-id"));
  keep_alive_ = keep_alive_ && message.keep_alive() && !core_->shutting_down.load();
  const unsigned http_version = message.version();
  parser_.reset();
  if (buffer_.capacity() > (256 << 10) && buffer_.size() < (64 << 10)) buffer_.shrink_to_fit();

  ++serial_;
  state_ = State::kHandling;
  request_id_ = request.request_id;
  head_request_ = request.method == "HEAD";
  http10_ = http_version == 10;
  client_gone_ = false;
  gone_callback_ = nullptr;
  counted_ = true;
  core_->active_exchanges.fetch_add(1);
  Watch();

  const bool needs_auth = !core_->options.api_key.empty() && request.path.starts_with("/v1/");
  // Bearer, or Anthropic's x-api-key header.
  const bool authorized = !needs_auth ||
                          BearerMatches(request.Header("authorization"), core_->options.api_key) ||
                          (!request.Header("x-api-key").empty() &&
                           ConstantTimeEquals(request.Header("x-api-key"), core_->options.api_key));
  std::optional<HttpResponse> preflight = core_->cors.Preflight(request);
  cors_headers_ = preflight ? HeaderList() : core_->cors.ResponseHeaders(request);
  auto exchange = std::make_shared<ExchangeImpl>(shared_from_this(), serial_, std::move(request));
  if (preflight) {  // answered before auth and routing, on any path (browsers send no credentials)
    exchange->Respond(std::move(*preflight));
    return;
  }
  if (!authorized) {
    constexpr std::string_view kDenied =
        "invalid or missing API key: send 'Authorization: Bearer <key>' or 'x-api-key: <key>'";
    HttpResponse denied = ErrorResponse(401, kDenied, "invalid_api_key");
    if (exchange->request().path.starts_with("/v1/messages")) denied.body = AnthropicErrorJson(401, kDenied);
    exchange->Respond(std::move(denied));
    return;
  }
  try {
    core_->router.Dispatch(exchange);
  } catch (const std::exception& e) {
    spdlog::error("request {}: handler threw: {}", request_id_, e.what());
    exchange->Respond(ErrorResponse(500, "internal error while handling the request"));
  }
}

// While an exchange runs, one read watches the socket: EOF or an error means the client went away;
// bytes mean a pipelined request, kept in the buffer for later.
void Session::Watch() {
  watching_ = true;
  AsyncWatch();
}

void Session::OnWatch(ErrorCode ec, size_t n) {
  watching_ = false;
  if (n > 0) buffer_.commit(n);
  if (closed_) return;
  if (ec && ec != net::error::operation_aborted && n == 0) {
    client_gone_ = true;
    Close();
    return;
  }
  if (resume_after_watch_) {
    resume_after_watch_ = false;
    WaitForRequest();
  }
}

void Session::Queue(std::string_view bytes) {
  if (closed_) return;
  out_pending_.append(bytes);
  if (!writing_) WriteMore();
}

void Session::WriteMore() {
  writing_ = true;
  out_inflight_.swap(out_pending_);
  out_pending_.clear();
  ArmTimer(core_->options.write_timeout);
  AsyncWrite();
}

void Session::OnWrite(ErrorCode ec) {
  writing_ = false;
  out_inflight_.clear();
  if (closed_) return;
  if (ec) {
    client_gone_ = true;
    Close();
    return;
  }
  if (!out_pending_.empty()) {
    WriteMore();
    return;
  }
  CancelTimer();
  if (lingering_) {
    // Last answer sent: stop sending, let the client read it (bounded), then close.
    if (watching_) CancelReads();  // the lingering close takes over reading
    ArmTimer(std::chrono::milliseconds(2000));
    AsyncLingerClose();
    return;
  }
  if (state_ == State::kEnded) FinishExchange();
}

void Session::EndAccounting() {
  if (counted_) {
    counted_ = false;
    core_->ExchangeEnded();
  }
}

void Session::FinishExchange() {
  state_ = State::kNone;
  gone_callback_ = nullptr;
  EndAccounting();
  if (!keep_alive_ || core_->shutting_down.load()) {
    LingerClose();
    return;
  }
  if (watching_) {  // the watch read must finish before the next request is read
    resume_after_watch_ = true;
    CancelReads();
    return;
  }
  WaitForRequest();
}

void Session::FailRequest(int status, std::string_view message) {
  keep_alive_ = false;
  lingering_ = true;
  parser_.reset();
  Queue(FormatResponse(ErrorResponse(status, message), RequestIdFor({}), false));
}

void Session::LingerClose() {
  if (closed_) return;
  if (writing_) {
    lingering_ = true;
    return;
  }
  lingering_ = true;
  // Nothing to send: an empty write completes at once and runs the lingering close in OnWrite.
  out_pending_.clear();
  WriteMore();
}

void Session::Close() {
  if (closed_) return;
  closed_ = true;
  idle_since_ns_.store(0);  // never picked again to make room
  core_->connections.fetch_sub(1);
  CloseStream();
  timer_.cancel();
  if (state_ == State::kHandling || state_ == State::kStreaming) {
    client_gone_ = true;
    if (gone_callback_) {
      auto callback = std::move(gone_callback_);
      gone_callback_ = nullptr;
      callback();
    }
  }
  EndAccounting();
}

void Session::DoRespond(uint64_t serial, HttpResponse response) {
  if (!SerialIsCurrent(serial) || state_ != State::kHandling) return;
  state_ = State::kEnded;
  if (closed_) return;
  const bool keep = keep_alive_ && !core_->shutting_down.load();
  keep_alive_ = keep;
  response.headers.insert(response.headers.end(), cors_headers_.begin(), cors_headers_.end());
  std::string bytes = FormatResponse(response, request_id_, keep);
  // HEAD: the GET answer's status and headers (Content-Length included), without its body.
  if (head_request_) bytes.resize(bytes.size() - response.body.size());
  Queue(bytes);
}

void Session::DoStartEvents(uint64_t serial, int status, HeaderList headers) {
  if (!SerialIsCurrent(serial) || state_ != State::kHandling) return;
  state_ = State::kStreaming;
  if (closed_) return;
  headers.insert(headers.end(), cors_headers_.begin(), cors_headers_.end());
  // HTTP/1.0 has no chunked encoding: the stream is sent as it is and ends when the connection closes.
  if (http10_) keep_alive_ = false;
  Queue(FormatEventStreamHead(status, headers, request_id_, keep_alive_, /*chunked=*/!http10_));
}

void Session::DoSendEvents(uint64_t serial, std::vector<std::string> payloads) {
  if (!SerialIsCurrent(serial) || state_ != State::kStreaming || closed_) return;
  Queue(http10_ ? FormatEventData(payloads) : FormatEventChunk(payloads));
}

void Session::DoEndEvents(uint64_t serial) {
  if (!SerialIsCurrent(serial) || state_ != State::kStreaming) return;
  state_ = State::kEnded;
  if (closed_) return;
  Queue(http10_ ? std::string_view() : kLastChunk);  // HTTP/1.0: the close ends the stream
}

void Session::DoOnClientGone(uint64_t serial, std::function<void()> callback) {
  if (serial != serial_) return;
  if (client_gone_ && (state_ == State::kHandling || state_ == State::kStreaming || closed_)) {
    callback();
    return;
  }
  if (state_ == State::kHandling || state_ == State::kStreaming) gone_callback_ = std::move(callback);
}

void Session::DoAbandon(uint64_t serial) {
  if (!SerialIsCurrent(serial)) return;
  if (state_ == State::kHandling) {
    DoRespond(serial, ErrorResponse(500, "the request ended without a response"));
  } else if (state_ == State::kStreaming) {
    DoEndEvents(serial);
  }
}

}  // namespace

struct HttpServer::Impl {
  Core core;
  net::io_context ioc;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  tcp::acceptor acceptor{net::make_strand(ioc)};
  std::optional<net::signal_set> signals;
  net::steady_timer accept_retry{acceptor.get_executor()};
  std::vector<std::thread> threads;
  uint16_t port = 0;
  std::string address;
  std::mutex stop_mu;
  std::condition_variable stop_cv;
  bool stop_requested = false;
  int stop_signal = 0;
  bool stopped = false;
  // Held open so that, out of descriptors, one can be freed to answer a client 503 (MakeRoom).
  int spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  Clock::time_point last_fd_log{};
  int64_t fd_logs_suppressed = 0;

  ~Impl() {
    if (spare_fd >= 0) ::close(spare_fd);
  }

  void Accept() {
    acceptor.async_accept(net::make_strand(ioc), [this](ErrorCode ec, tcp::socket socket) {
      if (!acceptor.is_open()) return;
      if (ec == net::error::no_descriptors || ec == boost::system::errc::too_many_files_open_in_system) {
        if (MakeRoom()) return;
      }
      if (ec) {
        // Out of descriptors with no idle connection to close, and the like: try again shortly instead of
        // spinning.
        spdlog::warn("accept failed: {}", ec.message());
        accept_retry.expires_after(std::chrono::milliseconds(50));
        accept_retry.async_wait([this](ErrorCode) {
          if (acceptor.is_open()) Accept();
        });
        return;
      }
      ErrorCode ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      std::shared_ptr<Session> session;
      if (core.tls) {
        session = std::make_shared<StreamSession<TlsStream>>(&core, std::move(socket), *core.tls);
      } else {
        session = std::make_shared<StreamSession<tcp::socket>>(&core, std::move(socket));
      }
      net::dispatch(session->executor(), [session] { session->Start(); });
      Accept();
    });
  }

  // The process is out of descriptors and a client waits in the backlog. Runs on the acceptor's strand;
  // true when it made room and Accept() runs again by itself.
  //  1. Close the keep-alive connection idle longest, then accept again: /health and new requests keep
  //     being served while idle connections fill the table (nginx and Go's server drop idle
  //     connections too; an HTTP client reconnects when an idle connection closes).
  //  2. No connection is idle (all busy): give up the spare descriptor held for this, accept the client,
  //     answer 503 (plain HTTP; a TLS client is closed: no handshake budget here), close it and take the
  //     spare again. Each round takes one client off the backlog, so this never spins.
  bool MakeRoom() {
    if (auto idle = core.OldestIdleSession()) {
      const double idle_s = static_cast<double>(NowNs() - idle->idle_since_ns()) / 1e9;
      LogFdPressure(fmt::format(
          "closing the keep-alive connection idle longest ({:.1f} s) to accept a new one", idle_s));
      net::post(idle->executor(), [this, idle] {
        idle->CloseIfIdle();
        net::post(acceptor.get_executor(), [this] {
          if (acceptor.is_open()) Accept();
        });
      });
      return true;
    }
    if (spare_fd < 0) return false;
    ::close(spare_fd);
    spare_fd = -1;
    const int fd = ::accept4(acceptor.native_handle(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) {
      LogFdPressure(core.tls
                        ? "no connection is idle: closing a new TLS connection with the spare descriptor"
                        : "no connection is idle: answering a new connection 503 with the spare descriptor");
      if (!core.tls) {
        // Read what the request sent so far (closing with unread bytes would reset the connection and
        // could destroy the answer), answer, half-close, close.
        char sink[4096];
        while (::recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0) {
        }
        HttpResponse busy = ErrorResponse(503, "the server is out of file descriptors; try again later");
        busy.headers.emplace_back("Retry-After", "1");
        const std::string bytes = FormatResponse(busy, RequestIdFor({}), false);
        [[maybe_unused]] ssize_t sent = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        ::shutdown(fd, SHUT_WR);
      }
      ::close(fd);
    }
    spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    net::post(acceptor.get_executor(), [this] {
      if (acceptor.is_open()) Accept();
    });
    return true;
  }

  // At most one line a second; the others are counted into the next.
  void LogFdPressure(const std::string& what) {
    const auto now = Clock::now();
    if (now - last_fd_log < std::chrono::seconds(1)) {
      ++fd_logs_suppressed;
      return;
    }
    spdlog::warn(
        "out of file descriptors ({} connections open): {}{}; raise the open files limit (ulimit -n) "
        "for more connections",
        core.connections.load(), what,
        fd_logs_suppressed > 0 ? fmt::format(" ({} more such events in the last second)", fd_logs_suppressed)
                               : std::string());
    last_fd_log = now;
    fd_logs_suppressed = 0;
  }

  void Request(int signal_number) {
    std::lock_guard<std::mutex> lock(stop_mu);
    if (!stop_requested) stop_signal = signal_number;
    stop_requested = true;
    stop_cv.notify_all();
  }

  void CloseAcceptor() {
    std::promise<void> done;
    auto future = done.get_future();
    net::dispatch(acceptor.get_executor(), [this, &done] {
      ErrorCode ignored;
      acceptor.close(ignored);
      accept_retry.cancel();
      done.set_value();
    });
    future.wait();
  }
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { Stop(); }

Result<std::unique_ptr<HttpServer>> HttpServer::Start(ServerOptions options, Router router) {
  auto impl = std::make_unique<Impl>();
  if (options.io_threads < 1) return InvalidArgument("io_threads must be >= 1, got {}", options.io_threads);
  impl->core.options = std::move(options);
  impl->core.router = std::move(router);
  impl->core.cors = CorsPolicy(impl->core.options.cors);
  const ServerOptions& o = impl->core.options;
  if (o.tls.enabled()) {
    K3_ASSIGN_OR_RETURN(SslCtxPtr ctx, MakeServerTlsContext(o.tls));
    impl->core.tls.emplace(ctx.release());  // the Asio context owns it from here
  }

  ErrorCode ec;
  net::ip::address ip = net::ip::make_address(o.host, ec);
  if (ec) {
    tcp::resolver resolver(impl->ioc);
    auto results = resolver.resolve(o.host, std::to_string(o.port), ec);
    if (ec || results.empty()) return InvalidArgument("--host {}: cannot resolve: {}", o.host, ec.message());
    ip = results.begin()->endpoint().address();
  }
  tcp::endpoint endpoint(ip, o.port);
  auto& acceptor = impl->acceptor;
  if (acceptor.open(endpoint.protocol(), ec); ec) return IoError("socket: {}", ec.message());
  acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (acceptor.bind(endpoint, ec); ec) {
    return IoError("cannot listen on {}:{}: {}", o.host, o.port, ec.message());
  }
  if (acceptor.listen(net::socket_base::max_listen_connections, ec); ec) {
    return IoError("listen on {}:{}: {}", o.host, o.port, ec.message());
  }
  impl->port = acceptor.local_endpoint().port();
  impl->address = ip.is_v6() ? fmt::format("[{}]:{}", ip.to_string(), impl->port)
                             : fmt::format("{}:{}", ip.to_string(), impl->port);
  impl->work.emplace(net::make_work_guard(impl->ioc));
  if (o.handle_signals) {
    impl->signals.emplace(impl->ioc, SIGINT, SIGTERM);
    Impl* raw = impl.get();
    impl->signals->async_wait([raw](ErrorCode sig_ec, int signal_number) {
      if (!sig_ec) raw->Request(signal_number);
    });
  }
  impl->Accept();
  for (int i = 0; i < o.io_threads; ++i) {
    Impl* raw = impl.get();
    impl->threads.emplace_back([raw] {
      while (true) {
        try {
          raw->ioc.run();
          return;
        } catch (const std::exception& e) {
          spdlog::error("I/O thread: {}", e.what());
        }
      }
    });
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

uint16_t HttpServer::port() const { return impl_->port; }
std::string HttpServer::address() const { return impl_->address; }
int64_t HttpServer::active_exchanges() const { return impl_->core.active_exchanges.load(); }
int64_t HttpServer::open_connections() const { return impl_->core.connections.load(); }

int HttpServer::WaitForStopSignal() {
  std::unique_lock<std::mutex> lock(impl_->stop_mu);
  impl_->stop_cv.wait(lock, [this] { return impl_->stop_requested; });
  return impl_->stop_signal;
}

void HttpServer::RequestStop() { impl_->Request(0); }

bool HttpServer::Drain(std::chrono::milliseconds timeout) {
  Core& core = impl_->core;
  core.shutting_down.store(true);
  impl_->CloseAcceptor();
  for (auto& session : core.LiveSessions()) {
    net::post(session->executor(), [session] { session->OnShutdown(); });
  }
  std::unique_lock<std::mutex> lock(core.drain_mu);
  return core.drain_cv.wait_for(lock, timeout, [&] { return core.active_exchanges.load() == 0; });
}

void HttpServer::Stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  Core& core = impl_->core;
  core.shutting_down.store(true);
  impl_->CloseAcceptor();
  if (impl_->signals) {
    std::promise<void> done;
    net::post(impl_->ioc, [this, &done] {
      ErrorCode ignored;
      impl_->signals->cancel(ignored);
      done.set_value();
    });
    done.get_future().wait();
  }
  for (auto& session : core.LiveSessions()) {
    net::post(session->executor(), [session] { session->ForceClose(); });
  }
  impl_->work.reset();
  // Closed sockets complete their operations promptly; give them a moment, then stop the loop.
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  while (core.connections.load() > 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  impl_->ioc.stop();
  for (auto& t : impl_->threads) t.join();
  impl_->threads.clear();
}

}  // namespace k3::server
