// POST /v1/embeddings over a real loopback socket: OpenAiService's route in front of a scripted engine
// (FakeEngine below answers each request with a known vector), so the route's wiring is checked on its
// own: one prefill-only engine request per input (Request::embed), data in input order whatever order the
// engine finishes in, base64 bytes, usage summed over inputs, 4xx errors before anything is submitted, a
// Submit refusal as its HTTP status, /invocations with an `input` body, and the metrics. The real
// engine's vectors are engine_test's; the whole path with the openai SDK is tests/compat/embeddings.
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "src/base/base64.h"
#include "src/server/http_server.h"
#include "src/server/openai_service.h"
#include "src/server/testing/http_client.h"

namespace k3::server {
namespace {

using nlohmann::json;

// An Engine whose requests finish at once, in reverse order of submission, on their own thread: request
// k's vector is {prompt length, first token id, k}.
// What a submitted request asked for (Request itself is move-only).
struct Submitted {
  std::vector<int32_t> prompt;
  bool embed = false;
  bool normalize = false;
  int32_t n = 0;
};

class FakeEngine final : public engine::Engine {
 public:
  ~FakeEngine() override { Join(); }
  Result<uint64_t> Submit(engine::Request request, engine::EventCallback on_event) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (refuse_) return InvalidArgument("refused by the fake engine");
    submitted_.push_back({request.prompt, request.embed, request.embed_normalize, request.sampling.n});
    const uint64_t id = submitted_.size();
    pending_.push_back({id, std::move(request), std::move(on_event)});
    if (static_cast<int64_t>(pending_.size()) == expect_) {
      std::vector<Pending> batch;
      batch.swap(pending_);
      threads_.emplace_back([batch = std::move(batch)] {
        for (auto it = batch.rbegin(); it != batch.rend(); ++it) {
          engine::Event e;
          e.embedding = {static_cast<float>(it->request.prompt.size()),
                         static_cast<float>(it->request.prompt[0]), static_cast<float>(it->id)};
          e.finish = engine::FinishReason::kStop;
          e.request_done = true;
          e.usage.prompt_tokens = static_cast<int64_t>(it->request.prompt.size());
          it->on_event(e);
        }
      });
    }
    return id;
  }
  void Cancel(uint64_t) override {}
  engine::EngineMetrics Metrics() const override { return {}; }
  bool ResetPrefixCache(std::function<void(int64_t)>) override { return false; }
  bool Sleep(std::function<void()>) override { return false; }
  void WakeUp() override {}
  bool IsSleeping() const override { return false; }
  bool Alive() const override { return true; }
  const engine::EngineOptions& options() const override { return options_; }
  void Shutdown(bool) override {}

  // The next request's events wait until `n` requests are pending (one HTTP request's inputs).
  void Expect(int64_t n, bool refuse = false) {
    std::lock_guard<std::mutex> lock(mu_);
    expect_ = n;
    refuse_ = refuse;
    submitted_.clear();
  }
  std::vector<Submitted> Requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return submitted_;
  }
  void Join() {
    std::vector<std::thread> threads;
    {
      std::lock_guard<std::mutex> lock(mu_);
      threads.swap(threads_);
    }
    for (std::thread& t : threads) t.join();
  }

 private:
  struct Pending {
    uint64_t id;
    engine::Request request;
    engine::EventCallback on_event;
  };
  std::mutex mu_;
  int64_t expect_ = 1;
  bool refuse_ = false;
  std::vector<Pending> pending_;
  std::vector<Submitted> submitted_;
  std::vector<std::thread> threads_;
  engine::EngineOptions options_;
};

class EmbeddingsRouteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<std::string> ranks;
    for (int b = 0; b < 256; ++b) ranks.push_back(std::string(1, static_cast<char>(b)));
    auto tok = tokenizer::Tokenizer::Create(ranks, {{256, "<|eos|>"}});
    ASSERT_TRUE(tok.ok());
    tokenizer_ = std::make_unique<tokenizer::Tokenizer>(std::move(*tok));
    api::ServerContext ctx;
    ctx.tokenizer = tokenizer_.get();
    ctx.served_model_name = "Kimi-K3";
    ctx.max_model_len = 16;
    service_.SetReady(&engine_, std::move(ctx));
    Router router;
    service_.AddRoutes(&router);
    ServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    auto server = HttpServer::Start(options, std::move(router));
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }
  void TearDown() override {
    server_->Stop();
    engine_.Join();
  }
  testing::TestResponse Post(const std::string& path, const json& body) {
    auto r = testing::Fetch(server_->port(), "POST", path, body.dump(), {"Content-Type: application/json"});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : testing::TestResponse{};
  }

  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
  FakeEngine engine_;
  OpenAiService service_{"Kimi-K3", "test"};
  std::unique_ptr<HttpServer> server_;
};

TEST_F(EmbeddingsRouteTest, OneEngineRequestPerInputAndDataInInputOrder) {
  engine_.Expect(3);
  const auto r =
      Post("/v1/embeddings", {{"model", "Kimi-K3"}, {"input", {"abc", json::array({104, 105}), "z"}}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json body = json::parse(r.body);
  EXPECT_EQ(body["object"], "list");
  EXPECT_EQ(body["model"], "Kimi-K3");
  EXPECT_EQ(body["id"].get<std::string>().rfind("embd-", 0), 0u) << body["id"];
  EXPECT_TRUE(body["created"].is_number_integer());
  ASSERT_EQ(body["data"].size(), 3u);
  // Finished in reverse order; data follows the inputs: {length, first id, engine request id}.
  EXPECT_EQ(body["data"][0]["embedding"], json::array({3.0, 97.0, 1.0}));
  EXPECT_EQ(body["data"][1]["embedding"], json::array({2.0, 104.0, 2.0}));
  EXPECT_EQ(body["data"][2]["embedding"], json::array({1.0, 122.0, 3.0}));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(body["data"][i]["index"], i);
    EXPECT_EQ(body["data"][i]["object"], "embedding");
  }
  EXPECT_EQ(body["usage"]["prompt_tokens"], 6);
  EXPECT_EQ(body["usage"]["total_tokens"], 6);
  EXPECT_EQ(body["usage"]["completion_tokens"], 0);
  const std::vector<Submitted> submitted = engine_.Requests();
  ASSERT_EQ(submitted.size(), 3u);
  for (const Submitted& req : submitted) {
    EXPECT_TRUE(req.embed);
    EXPECT_TRUE(req.normalize);
    EXPECT_EQ(req.n, 1);
  }
  EXPECT_EQ(submitted[0].prompt, (std::vector<int32_t>{97, 98, 99}));
}

TEST_F(EmbeddingsRouteTest, Base64AndInvocations) {
  engine_.Expect(1);
  const auto r =
      Post("/v1/embeddings", {{"input", "ab"}, {"encoding_format", "base64"}, {"normalize", false}});
  ASSERT_EQ(r.status, 200) << r.body;
  auto bytes = Base64Decode(json::parse(r.body)["data"][0]["embedding"].get<std::string>());
  ASSERT_TRUE(bytes.ok());
  ASSERT_EQ(bytes->size(), 3 * sizeof(float));
  float v[3];
  std::memcpy(v, bytes->data(), sizeof(v));
  EXPECT_EQ(v[0], 2.0f);
  EXPECT_EQ(v[1], 97.0f);
  EXPECT_FALSE(engine_.Requests().at(0).normalize);

  engine_.Expect(2);
  const auto inv = Post("/invocations", {{"input", {"a", "b"}}});
  ASSERT_EQ(inv.status, 200) << inv.body;
  EXPECT_EQ(json::parse(inv.body)["data"].size(), 2u);
  const auto metrics = testing::Fetch(server_->port(), "GET", "/metrics");
  ASSERT_TRUE(metrics.ok());
  EXPECT_NE(
      metrics->body.find("vllm:request_success_total{model_name=\"Kimi-K3\",finished_reason=\"stop\"} 3"),
      std::string::npos)
      << metrics->body;
}

TEST_F(EmbeddingsRouteTest, ErrorsAreAnsweredBeforeSubmitting) {
  engine_.Expect(1);
  for (const json& body : {json{{"input", json::array()}}, json{{"input", ""}},
                           json{{"input", "a"}, {"dimensions", 4}}, json{{"input", std::string(17, 'x')}},
                           json{{"input", 3}}, json{{"input", "a"}, {"encoding_format", "bf16"}}}) {
    const auto r = Post("/v1/embeddings", body);
    EXPECT_EQ(r.status, 400) << body.dump() << " " << r.body;
    const json error = json::parse(r.body, nullptr, false);
    EXPECT_TRUE(error.contains("error") && error["error"].contains("message")) << r.body;
  }
  EXPECT_EQ(Post("/v1/embeddings", {{"model", "other"}, {"input", "a"}}).status, 404);
  EXPECT_TRUE(engine_.Requests().empty());
  engine_.Expect(1, /*refuse=*/true);  // the engine's own refusal (Submit's InvalidArgument): 400
  const auto refused = Post("/v1/embeddings", {{"input", "a"}});
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_NE(refused.body.find("refused by the fake engine"), std::string::npos) << refused.body;
}

}  // namespace
}  // namespace k3::server
