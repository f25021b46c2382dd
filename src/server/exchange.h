// Exchange: one request and the channel its reply goes out on. Route handlers get a shared_ptr<Exchange>
// on the connection's I/O strand and may answer at once or later from any thread (engine events):
// every method is thread-safe and posts onto the connection's strand.
//
//   ex->Respond({200, "application/json", body});       // one response, ends the exchange
//   ex->StartEvents(); ex->SendEvent(json); ...; ex->EndEvents();   // text/event-stream
//   ex->OnClientGone([id] { engine->Cancel(id); });      // the client closed the connection first
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "src/server/http_types.h"

namespace k3::server {

class Exchange {
 public:
  virtual ~Exchange() = default;
  virtual const HttpRequest& request() const = 0;

  // Sends one complete response and ends the exchange. Ignored after the exchange ended.
  virtual void Respond(HttpResponse response) = 0;

  // Starts a chunked `text/event-stream` response with `status`. Then SendEvents (each payload becomes one
  // "data: <payload>\n\n" event; one call is one chunk, written and flushed right away) and EndEvents.
  virtual void StartEvents(int status = 200, HeaderList headers = {}) = 0;
  virtual void SendEvents(std::vector<std::string> payloads) = 0;
  void SendEvent(std::string payload) {
    std::vector<std::string> one;
    one.push_back(std::move(payload));
    SendEvents(std::move(one));
  }
  virtual void EndEvents() = 0;

  // `callback` runs once, on an I/O thread, if the client disconnects (or a write fails) before the
  // exchange ended; immediately (posted) if that already happened. At most one callback.
  virtual void OnClientGone(std::function<void()> callback) = 0;

  // Runs `fn` on the connection's strand (serialises work such as engine events with the writes).
  virtual void Post(std::function<void()> fn) = 0;
};

using Handler = std::function<void(std::shared_ptr<Exchange>)>;

}  // namespace k3::server
