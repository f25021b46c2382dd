// RunBench: model discovery, one load run per concurrency level, /metrics deltas.
#include "src/client/bench.h"

#include <cstdlib>
#include <ctime>

#include <fmt/format.h>

#include "src/client/load_generator.h"
#include "src/client/metrics_text.h"
#include "src/client/openai_stream.h"
#include "src/client/progress.h"
#include "src/image/geometry.h"

namespace k3::client {
namespace {

struct TokenCounters {
  std::optional<double> prompt, generation;
};

TokenCounters ScrapeCounters(HttpClient& client, const Endpoint& endpoint) {
  auto response = client.Get(endpoint.Url("/metrics"), endpoint.JsonHeaders());
  if (!response.ok() || response->status != 200) return {};
  const auto samples = ParseMetricsText(response->body);
  return {SumBySuffix(samples, ":prompt_tokens_total"), SumBySuffix(samples, ":generation_tokens_total")};
}

Result<std::string> FirstModel(HttpClient& client, const Endpoint& endpoint) {
  K3_ASSIGN_OR_RETURN(HttpResponse response, client.Get(endpoint.Url("/v1/models"), endpoint.JsonHeaders()));
  K3_ASSIGN_OR_RETURN(nlohmann::json body, ParseJsonAnswer(response, "GET /v1/models"));
  const auto& data = body["data"];
  if (!data.is_array() || data.empty() || !data[0].is_object() || !data[0].contains("id") ||
      !data[0]["id"].is_string()) {
    return DataLoss("GET /v1/models: no model listed; pass --model");
  }
  return data[0]["id"].get<std::string>();
}

std::string Now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", &tm);
  return buf;
}

}  // namespace

Result<std::vector<int>> ParseConcurrencyList(const std::string& text) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(pos, comma - pos);
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v <= 0 || v > 100000) {
      return InvalidArgument("--concurrency '{}': '{}' is not a positive integer", text, item);
    }
    out.push_back(static_cast<int>(v));
    pos = comma + 1;
  }
  return out;
}

Result<BenchRun> RunBench(const BenchOptions& options) {
  HttpClient client(options.http);
  BenchRun run;
  run.info.endpoint = options.endpoint.base;
  run.info.date = Now();
  WorkloadOptions workload = options.workload;
  if (workload.model.empty()) {
    auto model = FirstModel(client, options.endpoint);
    if (!model.ok()) return model.status();
    workload.model = *model;
  }
  run.info.model = workload.model;
  if (workload.images > 0) {
    run.info.images_per_request = workload.images;
    run.info.image_width = workload.image_width;
    run.info.image_height = workload.image_height;
    run.info.image_format = workload.image_format == image::EncodeFormat::kPng ? "png" : "jpeg";
    run.info.image_tokens =
        3 + image::PlanGeometry({workload.image_width, workload.image_height}, image::K3ProcessorConfig())
                .num_tokens;
  }
  K3_ASSIGN_OR_RETURN(std::vector<std::string> bodies, BuildWorkload(workload));
  for (int concurrency : options.concurrency) {
    LoadOptions load;
    load.endpoint = options.endpoint;
    load.concurrency = concurrency;
    load.request_rate = options.request_rate;
    load.duration_s = options.duration_s;
    load.seed = workload.seed;
    load.http = options.http;
    ProgressBar bar(options.progress, options.duration_s > 0 ? 0 : static_cast<int>(bodies.size()),
                    fmt::format("c={}", concurrency), options.progress != nullptr);
    load.on_progress = [&bar](int done, int failed) { bar.Update(done, failed); };
    const TokenCounters before = ScrapeCounters(client, options.endpoint);
    LoadResult result = RunLoad(bodies, load);
    bar.Finish();
    const TokenCounters after = ScrapeCounters(client, options.endpoint);
    BenchLevel level;
    level.concurrency = concurrency;
    level.request_rate = options.request_rate;
    level.num_prompts = static_cast<int>(result.records.size());
    level.metrics = ComputeMetrics(result.records, result.duration_s);
    level.records = std::move(result.records);
    if (before.prompt && after.prompt) level.server_prompt_tokens = *after.prompt - *before.prompt;
    if (before.generation && after.generation)
      level.server_generation_tokens = *after.generation - *before.generation;
    run.levels.push_back(std::move(level));
  }
  return run;
}

}  // namespace k3::client
