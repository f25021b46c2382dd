// CORS policy (cors.h). Behaviour follows Starlette's CORSMiddleware, which vLLM's server uses; written
// from its documented behaviour.
#include "src/server/cors.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace k3::server {
namespace {

constexpr int kMaxAgeSeconds = 600;  // Starlette's default
// What "*" means for methods (Starlette's list).
const std::vector<std::string> kAllMethods = {"DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT"};
// Always allowed request headers (the CORS safelist).
const std::vector<std::string> kSafelistedHeaders = {"Accept", "Accept-Language", "Content-Language",
                                                     "Content-Type"};

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool Contains(const std::vector<std::string>& list, std::string_view value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

std::string Join(const std::vector<std::string>& list) {
  std::string out;
  for (const std::string& s : list) {
    if (!out.empty()) out += ", ";
    out += s;
  }
  return out;
}

const std::string* FindHeader(const HttpRequest& request, std::string_view lower_name) {
  for (const auto& [name, value] : request.headers) {
    if (name == lower_name) return &value;
  }
  return nullptr;
}

}  // namespace

Result<std::vector<std::string>> ParseCorsList(std::string_view flag, std::string_view value) {
  const std::string_view text = Trim(value);
  std::vector<std::string> out;
  if (text.starts_with('[')) {
    const nlohmann::json list = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    bool ok = list.is_array();
    for (const auto& item : ok ? list : nlohmann::json::array()) {
      if (!item.is_string()) {
        ok = false;
        break;
      }
      out.push_back(item.get<std::string>());
    }
    if (!ok) {
      return InvalidArgument("{} {}: expected a JSON list of strings such as '[\"https://a.example\"]'", flag,
                             value);
    }
    return out;
  }
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t end = std::min(text.find(',', begin), text.size());
    const std::string_view item = Trim(text.substr(begin, end - begin));
    if (!item.empty()) out.emplace_back(item);
    begin = end + 1;
  }
  if (out.empty()) {
    return InvalidArgument("{} '{}': expected a JSON list such as '[\"https://a.example\"]' or a comma list",
                           flag, value);
  }
  return out;
}

CorsPolicy::CorsPolicy(CorsOptions options) : options_(std::move(options)) {
  all_origins_ = Contains(options_.allowed_origins, "*");
  all_headers_ = Contains(options_.allowed_headers, "*");
  methods_ = Contains(options_.allowed_methods, "*") ? kAllMethods : options_.allowed_methods;
  for (const std::vector<std::string>* list :
       {&kSafelistedHeaders, &std::as_const(options_.allowed_headers)}) {
    for (const std::string& h : *list) {
      if (h == "*" || Contains(headers_lower_, Lower(h))) continue;
      headers_.push_back(h);
      headers_lower_.push_back(Lower(h));
    }
  }
}

bool CorsPolicy::OriginAllowed(std::string_view origin) const {
  return all_origins_ || Contains(options_.allowed_origins, origin);
}

std::optional<HttpResponse> CorsPolicy::Preflight(const HttpRequest& request) const {
  if (request.method != "OPTIONS") return std::nullopt;
  const std::string* origin = FindHeader(request, "origin");
  const std::string* method = FindHeader(request, "access-control-request-method");
  if (origin == nullptr || method == nullptr) return std::nullopt;
  const std::string* requested_headers = FindHeader(request, "access-control-request-headers");

  HttpResponse response;
  response.content_type = "text/plain; charset=utf-8";
  std::vector<std::string> failures;
  const bool explicit_origin = !all_origins_ || options_.allow_credentials;
  if (!OriginAllowed(*origin)) {
    failures.push_back("origin");
  } else {
    response.headers.emplace_back("Access-Control-Allow-Origin", explicit_origin ? *origin : "*");
  }
  if (explicit_origin) response.headers.emplace_back("Vary", "Origin");
  if (!Contains(methods_, *method)) failures.push_back("method");
  response.headers.emplace_back("Access-Control-Allow-Methods", Join(methods_));
  response.headers.emplace_back("Access-Control-Max-Age", std::to_string(kMaxAgeSeconds));
  if (all_headers_) {
    if (requested_headers != nullptr)
      response.headers.emplace_back("Access-Control-Allow-Headers", *requested_headers);
  } else {
    response.headers.emplace_back("Access-Control-Allow-Headers", Join(headers_));
    if (requested_headers != nullptr) {
      std::string_view rest = *requested_headers;
      while (!rest.empty()) {
        const size_t comma = std::min(rest.find(','), rest.size());
        const std::string name = Lower(Trim(rest.substr(0, comma)));
        rest.remove_prefix(std::min(comma + 1, rest.size()));
        if (!name.empty() && !Contains(headers_lower_, name)) {
          failures.push_back("headers");
          break;
        }
      }
    }
  }
  if (options_.allow_credentials) response.headers.emplace_back("Access-Control-Allow-Credentials", "true");
  if (failures.empty()) {
    response.body = "OK";
  } else {
    response.status = 400;
    response.body = "Disallowed CORS " + Join(failures);
  }
  return response;
}

HeaderList CorsPolicy::ResponseHeaders(const HttpRequest& request) const {
  HeaderList out;
  const std::string* origin = FindHeader(request, "origin");
  if (origin == nullptr || !OriginAllowed(*origin)) return out;
  if (all_origins_ && !options_.allow_credentials) {
    out.emplace_back("Access-Control-Allow-Origin", "*");
    return out;
  }
  out.emplace_back("Access-Control-Allow-Origin", *origin);
  out.emplace_back("Vary", "Origin");
  if (options_.allow_credentials) out.emplace_back("Access-Control-Allow-Credentials", "true");
  return out;
}

}  // namespace k3::server
