// HttpServer: asynchronous HTTP/1.1 on Boost.Beast/Asio (all of Beast stays in http_server.cc).
//
//   Router router;  router.Add("GET", "/health", handler);
//   auto server = HttpServer::Start(options, std::move(router));   // listening when this returns
//   server->WaitForStopSignal();                                   // SIGINT / SIGTERM / RequestStop()
//   server->Drain(30s);  server->Stop();
//
// N I/O threads share one io_context; each connection runs on its own strand. Keep-alive and pipelined
// requests are answered in order, one at a time. An idle keep-alive connection holds only its socket
// (it waits for readability without a buffer). Deadlines: idle keep-alive, header (from the first byte),
// body, and each write (a client that stops reading is dropped). Bodies over max_body_bytes get 413,
// oversized headers 431, malformed HTTP 400, all as OpenAI error JSON. With api_key set, /v1/* requires
// `Authorization: Bearer <key>` (401 otherwise). X-Request-Id is echoed, or generated when absent.
// While an exchange runs the connection is watched for EOF, so a client that goes away is reported
// through Exchange::OnClientGone.
//
// Out of file descriptors (idle keep-alive connections filling the table), the acceptor closes the
// connection idle longest to accept the new one; with none idle it frees a spare descriptor held for this,
// answers the new client 503 (plain HTTP) and takes the spare again. Rate-limited warnings say why.
//
// With options.tls set every connection is TLS (1.2 or newer) and everything above works the same over it:
// the session logic is written once and only its stream operations differ. A client that does not speak
// TLS (plain HTTP to the HTTPS port) fails the handshake and its connection is closed.
//
// CORS (cors.h) as vLLM's server: preflights are answered before auth on every path, and answers to
// requests from allowed origins (event streams too) carry Access-Control-Allow-Origin.
//
// Exchanges handed out must be released before the server is destroyed (the engine that holds them is
// shut down first).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "src/base/status.h"
#include "src/server/cors.h"
#include "src/server/router.h"
#include "src/server/tls_config.h"

namespace k3::server {

struct ServerOptions {
  std::string host = "0.0.0.0";
  uint16_t port = 8000;  // 0: any free port (see HttpServer::port())
  int io_threads = 2;
  size_t max_body_bytes = 16 << 20;
  size_t max_header_bytes = 64 << 10;
  std::chrono::milliseconds idle_timeout{60'000};    // keep-alive connection with no request
  std::chrono::milliseconds header_timeout{10'000};  // first byte .. end of header
  std::chrono::milliseconds body_timeout{60'000};
  std::chrono::milliseconds write_timeout{60'000};  // one write (a stalled reader is dropped)
  std::string api_key;                              // non-empty: Bearer auth on /v1/*
  bool handle_signals = false;                      // SIGINT / SIGTERM end WaitForStopSignal()
  CorsOptions cors;                                 // vLLM's --allowed-origins etc. (default: all)
  TlsOptions tls;                                   // with a certificate: HTTPS only (vLLM's --ssl-*)
};

class HttpServer {
 public:
  // Binds, listens and starts the I/O threads.
  static Result<std::unique_ptr<HttpServer>> Start(ServerOptions options, Router router);
  ~HttpServer();  // Stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  uint16_t port() const;
  std::string address() const;  // "host:port" as bound
  int64_t active_exchanges() const;
  int64_t open_connections() const;

  // Blocks until SIGINT / SIGTERM (with handle_signals) or RequestStop(). Returns the signal number, or 0.
  int WaitForStopSignal();
  void RequestStop();

  // Stops accepting, closes idle connections, marks the others to close after their current exchange and
  // waits up to `timeout` for running exchanges. True when none is left.
  bool Drain(std::chrono::milliseconds timeout);
  // Closes every connection and joins the I/O threads. Idempotent.
  void Stop();

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace k3::server
