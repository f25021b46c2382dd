// Unit tests of the server's pure parts: bearer auth, request ids, SSE framing, response bytes, Prometheus
// text and histograms, error JSON.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "src/server/auth.h"
#include "src/server/error_json.h"
#include "src/server/http_format.h"
#include "src/server/metrics.h"
#include "src/server/request_id.h"

namespace k3::server {
namespace {

TEST(AuthTest, ConstantTimeEquals) {
  EXPECT_TRUE(ConstantTimeEquals("secret", "secret"));
  EXPECT_FALSE(ConstantTimeEquals("secreT", "secret"));
  EXPECT_FALSE(ConstantTimeEquals("secret1", "secret"));
  EXPECT_FALSE(ConstantTimeEquals("secre", "secret"));
  EXPECT_FALSE(ConstantTimeEquals("", "secret"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
}

TEST(AuthTest, BearerMatches) {
  EXPECT_TRUE(BearerMatches("Bearer sk-1", "sk-1"));
  EXPECT_TRUE(BearerMatches("bearer   sk-1 ", "sk-1"));
  EXPECT_FALSE(BearerMatches("Bearer sk-2", "sk-1"));
  EXPECT_FALSE(BearerMatches("Basic sk-1", "sk-1"));
  EXPECT_FALSE(BearerMatches("Bearersk-1", "sk-1"));
  EXPECT_FALSE(BearerMatches("", "sk-1"));
  EXPECT_FALSE(BearerMatches("Bearer ", "sk-1"));
}

TEST(RequestIdTest, EchoesSaneIdsAndGeneratesOthers) {
  EXPECT_EQ(RequestIdFor("abc-123"), "abc-123");
  const std::string generated = RequestIdFor("");
  EXPECT_EQ(generated.size(), 32u);
  EXPECT_EQ(generated.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(RequestIdFor("has space"), "has space");
  EXPECT_EQ(RequestIdFor(std::string(200, 'a')), std::string(128, 'a'));  // capped and echoed, as vLLM
  EXPECT_NE(GenerateRequestId(), GenerateRequestId());
}

TEST(HttpFormatTest, EventChunkFramesEveryPayload) {
  const std::string chunk = FormatEventChunk({"{\"a\":1}", "[DONE]"});
  const std::string data = "data: {\"a\":1}\n\ndata: [DONE]\n\n";
  EXPECT_EQ(chunk, fmt::format("{:x}\r\n{}\r\n", data.size(), data));
  EXPECT_EQ(FormatEventChunk({"a\nb"}), "11\r\ndata: a\ndata: b\n\n\r\n");
  EXPECT_EQ(FormatEventChunk({}), "");
  // A payload naming its event (Anthropic streams): the event line as it is, the rest as data.
  EXPECT_EQ(FormatEventData({"event: ping\n{\"type\":\"ping\"}"}),
            "event: ping\ndata: {\"type\":\"ping\"}\n\n");
}

TEST(HttpFormatTest, ResponseHasLengthIdAndConnection) {
  HttpResponse r;
  r.status = 429;
  r.body = "{}";
  r.headers.emplace_back("Retry-After", "1");
  const std::string bytes = FormatResponse(r, "rid", false);
  EXPECT_TRUE(bytes.starts_with("HTTP/1.1 429 Too Many Requests\r\n"));
  EXPECT_NE(bytes.find("Content-Length: 2\r\n"), std::string::npos);
  EXPECT_NE(bytes.find("Retry-After: 1\r\n"), std::string::npos);
  EXPECT_NE(bytes.find("X-Request-Id: rid\r\n"), std::string::npos);
  EXPECT_NE(bytes.find("Connection: close\r\n"), std::string::npos);
  EXPECT_TRUE(bytes.ends_with("\r\n\r\n{}"));
}

TEST(ErrorJsonTest, OpenAiShape) {
  auto j = nlohmann::json::parse(ErrorJson(404, "no such model", "model_not_found"));
  EXPECT_EQ(j["error"]["message"], "no such model");
  EXPECT_EQ(j["error"]["type"], "not_found_error");
  EXPECT_TRUE(j["error"]["param"].is_null());
  EXPECT_EQ(j["error"]["code"], "model_not_found");
  auto k = nlohmann::json::parse(ErrorJson(413, "big\xff"));
  EXPECT_EQ(k["error"]["type"], "invalid_request_error");
  EXPECT_TRUE(k["error"]["code"].is_null());
  EXPECT_EQ(std::string(ErrorTypeForStatus(401)), "authentication_error");
  EXPECT_EQ(std::string(ErrorTypeForStatus(500)), "internal_server_error");
}

// One table (src/api/error_table.h) names every status in both shapes; unlisted statuses fall back to
// 400's and 500's names.
TEST(ErrorJsonTest, OneTableForBothShapes) {
  EXPECT_EQ(std::string(ErrorTypeForStatus(503)), "service_unavailable_error");
  EXPECT_EQ(std::string(ErrorTypeForStatus(429)), "rate_limit_error");
  EXPECT_EQ(std::string(ErrorTypeForStatus(418)), "invalid_request_error");
  EXPECT_EQ(std::string(ErrorTypeForStatus(502)), "internal_server_error");
  auto anthropic = [](int status) {
    return nlohmann::json::parse(AnthropicErrorJson(status, "m"))["error"]["type"].get<std::string>();
  };
  EXPECT_EQ(anthropic(401), "authentication_error");
  EXPECT_EQ(anthropic(413), "request_too_large");
  EXPECT_EQ(anthropic(429), "rate_limit_error");
  EXPECT_EQ(anthropic(500), "api_error");
  EXPECT_EQ(anthropic(503), "overloaded_error");
  EXPECT_EQ(anthropic(431), "invalid_request_error");
}

TEST(MetricsTest, HistogramIsCumulative) {
  Histogram h({0.1, 1.0});
  h.Observe(0.05);
  h.Observe(0.1);  // le is inclusive
  h.Observe(0.5);
  h.Observe(7.0);
  auto s = h.Read();
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{2, 3, 4}));
  EXPECT_EQ(s.count, 4u);
  EXPECT_DOUBLE_EQ(s.sum, 7.65);
}

TEST(MetricsTest, PrometheusText) {
  PrometheusText t;
  t.Gauge("vllm:num_requests_running", "Running.", "model_name=\"K\"", 3);
  t.Counter("vllm:prompt_tokens", "Prompt tokens.", "model_name=\"K\"", 12);
  Histogram h({0.5});
  h.Observe(0.25);
  t.Histogram("vllm:e2e_request_latency_seconds", "E2E.", "model_name=\"K\"", h.Read());
  const std::string& s = t.text();
  EXPECT_NE(
      s.find("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"K\"} 3.0\n"),
      std::string::npos);
  EXPECT_NE(s.find("# TYPE vllm:prompt_tokens counter\nvllm:prompt_tokens_total{model_name=\"K\"} 12.0\n"),
            std::string::npos);
  EXPECT_NE(s.find("vllm:e2e_request_latency_seconds_bucket{model_name=\"K\",le=\"0.5\"} 1\n"),
            std::string::npos);
  EXPECT_NE(s.find("vllm:e2e_request_latency_seconds_bucket{model_name=\"K\",le=\"+Inf\"} 1\n"),
            std::string::npos);
  EXPECT_NE(s.find("vllm:e2e_request_latency_seconds_sum{model_name=\"K\"} 0.25\n"), std::string::npos);
  EXPECT_NE(s.find("vllm:e2e_request_latency_seconds_count{model_name=\"K\"} 1\n"), std::string::npos);
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

}  // namespace
}  // namespace k3::server
