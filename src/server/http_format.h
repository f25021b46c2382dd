// HTTP/1.1 response bytes: a complete response, the head of a chunked text/event-stream response, and
// SSE events framed as one chunk. The server writes these strings to the socket as they are.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "src/server/http_types.h"

namespace k3::server {

const char* ReasonPhrase(int status);

// Status line, Content-Type, Content-Length, X-Request-Id, Connection, extra headers, blank line, body.
std::string FormatResponse(const HttpResponse& response, std::string_view request_id, bool keep_alive);

// Status line and headers of an event stream (Cache-Control: no-cache). `chunked`: Transfer-Encoding:
// chunked; false for an HTTP/1.0 client, whose stream has no length and ends when the connection closes.
std::string FormatEventStreamHead(int status, const HeaderList& headers, std::string_view request_id,
                                  bool keep_alive, bool chunked = true);

// "data: <payload>\n\n" for every payload, unframed (an HTTP/1.0 stream's bytes). A payload that starts
// with "event: NAME\n" is written as "event: NAME\ndata: <rest>\n\n" (a named SSE event).
std::string FormatEventData(const std::vector<std::string>& payloads);

// One chunk holding FormatEventData(payloads). Payloads must not contain newlines (JSON
// from nlohmann never does); a payload with one is split into several data: lines.
std::string FormatEventChunk(const std::vector<std::string>& payloads);

// The terminating zero-length chunk.
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

}  // namespace k3::server
