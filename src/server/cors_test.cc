// CorsPolicy and the CORS flag lists (cors.h): preflight answers and response headers for the default
// allow-all policy, a list of origins, credentials, and refused origins / methods / headers.
#include "src/server/cors.h"

#include <gtest/gtest.h>

namespace k3::server {
namespace {

HttpRequest Request(std::string method, HeaderList headers) {
  HttpRequest r;
  r.method = std::move(method);
  r.target = r.path = "/v1/chat/completions";
  r.headers = std::move(headers);
  return r;
}

std::string HeaderOf(const HeaderList& headers, std::string_view name) {
  for (const auto& [n, v] : headers) {
    if (n == name) return v;
  }
  return "<none>";
}

TEST(CorsListTest, JsonListCommaListAndErrors) {
  auto json = ParseCorsList("--allowed-origins", R"(["https://a.example", "http://b.example:8080"])");
  ASSERT_TRUE(json.ok());
  EXPECT_EQ(*json, (std::vector<std::string>{"https://a.example", "http://b.example:8080"}));
  auto comma = ParseCorsList("--allowed-methods", " GET, POST ,");
  ASSERT_TRUE(comma.ok());
  EXPECT_EQ(*comma, (std::vector<std::string>{"GET", "POST"}));
  auto empty_json = ParseCorsList("--allowed-origins", "[]");
  ASSERT_TRUE(empty_json.ok());
  EXPECT_TRUE(empty_json->empty());
  for (const char* bad : {R"(["a", 1])", "[\"unterminated", "", " , ", R"([{"a": 1}])"}) {
    auto r = ParseCorsList("--allowed-headers", bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--allowed-headers"), std::string::npos);
  }
}

TEST(CorsPolicyTest, DefaultAllowsEverythingWithStar) {
  CorsPolicy policy;
  auto simple = policy.ResponseHeaders(Request("POST", {{"origin", "https://x.example"}}));
  EXPECT_EQ(HeaderOf(simple, "Access-Control-Allow-Origin"), "*");
  EXPECT_EQ(HeaderOf(simple, "Vary"), "<none>");
  EXPECT_TRUE(policy.ResponseHeaders(Request("POST", {})).empty());  // no Origin: no CORS headers

  auto pre = policy.Preflight(Request("OPTIONS", {{"origin", "https://x.example"},
                                                  {"access-control-request-method", "POST"},
                                                  {"access-control-request-headers", "authorization, x-y"}}));
  ASSERT_TRUE(pre.has_value());
  EXPECT_EQ(pre->status, 200);
  EXPECT_EQ(pre->body, "OK");
  EXPECT_EQ(HeaderOf(pre->headers, "Access-Control-Allow-Origin"), "*");
  EXPECT_EQ(HeaderOf(pre->headers, "Access-Control-Allow-Methods"),
            "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT");
  EXPECT_EQ(HeaderOf(pre->headers, "Access-Control-Allow-Headers"), "authorization, x-y");  // echoed
  EXPECT_EQ(HeaderOf(pre->headers, "Access-Control-Max-Age"), "600");
  // Not a preflight: OPTIONS without Access-Control-Request-Method, or without Origin.
  EXPECT_FALSE(policy.Preflight(Request("OPTIONS", {{"origin", "https://x.example"}})).has_value());
  EXPECT_FALSE(policy.Preflight(Request("OPTIONS", {{"access-control-request-method", "GET"}})).has_value());
}

TEST(CorsPolicyTest, ListedOriginsAreEchoedOthersRefused) {
  CorsOptions options;
  options.allowed_origins = {"https://a.example"};
  options.allowed_methods = {"GET", "POST"};
  options.allowed_headers = {"Authorization"};
  CorsPolicy policy(options);
  auto simple = policy.ResponseHeaders(Request("GET", {{"origin", "https://a.example"}}));
  EXPECT_EQ(HeaderOf(simple, "Access-Control-Allow-Origin"), "https://a.example");
  EXPECT_EQ(HeaderOf(simple, "Vary"), "Origin");
  EXPECT_TRUE(policy.ResponseHeaders(Request("GET", {{"origin", "https://evil.example"}})).empty());

  auto ok = policy.Preflight(
      Request("OPTIONS", {{"origin", "https://a.example"},
                          {"access-control-request-method", "POST"},
                          {"access-control-request-headers", "Content-Type, authorization"}}));
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(HeaderOf(ok->headers, "Access-Control-Allow-Origin"), "https://a.example");
  EXPECT_EQ(HeaderOf(ok->headers, "Access-Control-Allow-Methods"), "GET, POST");
  EXPECT_EQ(HeaderOf(ok->headers, "Access-Control-Allow-Headers"),
            "Accept, Accept-Language, Content-Language, Content-Type, Authorization");
  EXPECT_EQ(HeaderOf(ok->headers, "Vary"), "Origin");

  auto bad = policy.Preflight(Request("OPTIONS", {{"origin", "https://evil.example"},
                                                  {"access-control-request-method", "DELETE"},
                                                  {"access-control-request-headers", "x-other"}}));
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(bad->body, "Disallowed CORS origin, method, headers");
  EXPECT_EQ(HeaderOf(bad->headers, "Access-Control-Allow-Origin"), "<none>");
  auto method_only = policy.Preflight(
      Request("OPTIONS", {{"origin", "https://a.example"}, {"access-control-request-method", "PUT"}}));
  ASSERT_TRUE(method_only.has_value());
  EXPECT_EQ(method_only->body, "Disallowed CORS method");
}

TEST(CorsPolicyTest, CredentialsEchoTheOriginEvenWhenAllAreAllowed) {
  CorsOptions options;
  options.allow_credentials = true;
  CorsPolicy policy(options);
  auto simple = policy.ResponseHeaders(Request("GET", {{"origin", "https://x.example"}}));
  EXPECT_EQ(HeaderOf(simple, "Access-Control-Allow-Origin"), "https://x.example");
  EXPECT_EQ(HeaderOf(simple, "Vary"), "Origin");
  EXPECT_EQ(HeaderOf(simple, "Access-Control-Allow-Credentials"), "true");
  auto pre = policy.Preflight(
      Request("OPTIONS", {{"origin", "https://x.example"}, {"access-control-request-method", "GET"}}));
  ASSERT_TRUE(pre.has_value());
  EXPECT_EQ(HeaderOf(pre->headers, "Access-Control-Allow-Origin"), "https://x.example");
  EXPECT_EQ(HeaderOf(pre->headers, "Access-Control-Allow-Credentials"), "true");
}

}  // namespace
}  // namespace k3::server
