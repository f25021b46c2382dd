// HTTP/1.1 response serialisation (no Beast here: responses are small strings built directly).
#include "src/server/http_format.h"

#include <fmt/format.h>

namespace k3::server {

const char* ReasonPhrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 422:
      return "Unprocessable Entity";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    default:
      return "Unknown";
  }
}

namespace {

void AppendCommonHeaders(std::string& out, const HeaderList& headers, std::string_view request_id,
                         bool keep_alive) {
  for (const auto& [name, value] : headers)
    fmt::format_to(std::back_inserter(out), "{}: {}\r\n", name, value);
  if (!request_id.empty()) fmt::format_to(std::back_inserter(out), "X-Request-Id: {}\r\n", request_id);
  out += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
}

}  // namespace

std::string FormatResponse(const HttpResponse& response, std::string_view request_id, bool keep_alive) {
  std::string out;
  out.reserve(192 + response.body.size());
  fmt::format_to(std::back_inserter(out), "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n",
                 response.status, ReasonPhrase(response.status), response.content_type, response.body.size());
  AppendCommonHeaders(out, response.headers, request_id, keep_alive);
  out += "\r\n";
  out += response.body;
  return out;
}

std::string FormatEventStreamHead(int status, const HeaderList& headers, std::string_view request_id,
                                  bool keep_alive, bool chunked) {
  std::string out = fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-cache\r\n{}",
      status, ReasonPhrase(status), chunked ? "Transfer-Encoding: chunked\r\n" : "");
  AppendCommonHeaders(out, headers, request_id, keep_alive);
  out += "\r\n";
  return out;
}

std::string FormatEventData(const std::vector<std::string>& payloads) {
  std::string data;
  for (const std::string& payload : payloads) {
    size_t begin = 0;
    // A payload "event: NAME\n<data>" names its event (Anthropic's streams): that line goes as it is.
    if (payload.starts_with("event: ")) {
      const size_t end = payload.find('\n');
      if (end != std::string::npos) {
        data.append(payload, 0, end + 1);
        begin = end + 1;
      }
    }
    while (true) {
      const size_t end = payload.find('\n', begin);
      data += "data: ";
      data.append(payload, begin, end == std::string::npos ? std::string::npos : end - begin);
      data += '\n';
      if (end == std::string::npos) break;
      begin = end + 1;
    }
    data += '\n';
  }
  return data;
}

std::string FormatEventChunk(const std::vector<std::string>& payloads) {
  const std::string data = FormatEventData(payloads);
  if (data.empty()) return {};
  std::string out = fmt::format("{:x}\r\n", data.size());
  out += data;
  out += "\r\n";
  return out;
}

}  // namespace k3::server
