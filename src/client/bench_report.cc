// VllmResultJson and FormatBenchSummary.
#include "src/client/bench_report.h"

#include <cmath>
#include <tuple>

#include <fmt/format.h>

namespace k3::client {
namespace {

using nlohmann::json;

// vLLM writes p99, p99.9 -> "p99", "p99.9".
std::string PercentileWord(double p) {
  return p == std::floor(p) ? fmt::format("{}", static_cast<int64_t>(p)) : fmt::format("{}", p);
}

void AddDistribution(json& out, const std::string& name, const Distribution& d) {
  out["mean_" + name + "_ms"] = d.mean;
  out["median_" + name + "_ms"] = d.median;
  out["std_" + name + "_ms"] = d.std;
  for (const auto& [p, v] : d.percentiles) out["p" + PercentileWord(p) + "_" + name + "_ms"] = v;
}

}  // namespace

json VllmResultJson(const BenchLevel& level, const BenchRunInfo& info) {
  const BenchMetrics& m = level.metrics;
  json out;
  out["date"] = info.date;
  out["endpoint_type"] = "openai-chat";
  out["backend"] = "openai-chat";
  out["base_url"] = info.endpoint;
  out["model_id"] = info.model;
  out["tokenizer_id"] = info.model;
  out["num_prompts"] = level.num_prompts;
  if (std::isfinite(level.request_rate)) {
    out["request_rate"] = level.request_rate;
  } else {
    out["request_rate"] = "inf";
  }
  out["burstiness"] = 1.0;
  out["max_concurrency"] = level.concurrency;
  out["duration"] = m.duration_s;
  out["completed"] = m.completed;
  out["failed"] = m.failed;
  out["total_input_tokens"] = m.total_input;
  out["total_output_tokens"] = m.total_output;
  out["request_throughput"] = m.request_throughput;
  out["request_goodput"] = nullptr;
  out["output_throughput"] = m.output_throughput;
  out["total_token_throughput"] = m.total_token_throughput;
  json input_lens = json::array(), output_lens = json::array(), ttfts = json::array(), itls = json::array(),
       starts = json::array(), texts = json::array(), errors = json::array();
  for (const RequestRecord& r : level.records) {
    input_lens.push_back(r.prompt_tokens);
    output_lens.push_back(r.success ? r.output_tokens : 0);
    ttfts.push_back(r.success ? r.ttft_s : 0.0);
    itls.push_back(r.itl_s);
    starts.push_back(r.start_s);
    texts.push_back(r.generated_text);
    errors.push_back(r.error);
  }
  out["input_lens"] = std::move(input_lens);
  out["output_lens"] = std::move(output_lens);
  out["ttfts"] = std::move(ttfts);
  out["itls"] = std::move(itls);
  out["start_times"] = std::move(starts);
  out["generated_texts"] = std::move(texts);
  out["errors"] = std::move(errors);
  out["max_output_tokens_per_s"] = m.max_output_tokens_per_s;
  out["max_concurrent_requests"] = m.max_concurrent_requests;
  AddDistribution(out, "ttft", m.ttft);
  AddDistribution(out, "tpot", m.tpot);
  AddDistribution(out, "itl", m.itl);
  AddDistribution(out, "e2el", m.e2el);
  if (level.server_prompt_tokens) out["server_prompt_tokens"] = *level.server_prompt_tokens;
  if (level.server_generation_tokens) out["server_generation_tokens"] = *level.server_generation_tokens;
  if (info.images_per_request > 0) {
    out["images_per_request"] = info.images_per_request;
    out["image_width"] = info.image_width;
    out["image_height"] = info.image_height;
    out["image_format"] = info.image_format;
    out["image_tokens_per_image"] = info.image_tokens;
  }
  return out;
}

std::string FormatBenchSummary(const BenchLevel& level, const BenchRunInfo& info) {
  const BenchMetrics& m = level.metrics;
  std::string out = fmt::format("{:=^50}\n", " Serving Benchmark Result ");
  auto row = [&](const std::string& name, const std::string& value) {
    out += fmt::format("{:<40} {:<10}\n", name, value);
  };
  auto num = [](double v) { return fmt::format("{:.2f}", v); };
  row("Maximum request concurrency:", std::to_string(level.concurrency));
  if (info.images_per_request > 0) {
    row("Images per request:", fmt::format("{} x {}x{} {} (random pixels)", info.images_per_request,
                                           info.image_width, info.image_height, info.image_format));
    row("K3 image prompt per image (tokens):",
        fmt::format("3 + {} + 'image {}x{}'", info.image_tokens - 3, info.image_width, info.image_height));
  }
  row("Successful requests:", std::to_string(m.completed));
  row("Failed requests:", std::to_string(m.failed));
  row("Benchmark duration (s):", num(m.duration_s));
  row("Total input tokens:", std::to_string(m.total_input));
  row("Total generated tokens:", std::to_string(m.total_output));
  if (level.server_prompt_tokens && level.server_generation_tokens) {
    row("Server /metrics input, generated:",
        fmt::format("{:.0f}, {:.0f}", *level.server_prompt_tokens, *level.server_generation_tokens));
  }
  row("Request throughput (req/s):", num(m.request_throughput));
  row("Output token throughput (tok/s):", num(m.output_throughput));
  row("Peak output token throughput (tok/s):", num(m.max_output_tokens_per_s));
  row("Peak concurrent requests:", std::to_string(m.max_concurrent_requests));
  row("Total token throughput (tok/s):", num(m.total_token_throughput));
  const std::vector<std::tuple<const char*, const char*, const Distribution*>> sections = {
      {"Time to First Token", "TTFT", &m.ttft},
      {"Time per Output Token (excl. 1st token)", "TPOT", &m.tpot},
      {"Inter-token Latency", "ITL", &m.itl},
      {"End-to-end Latency", "E2EL", &m.e2el}};
  for (const auto& [header, name, d] : sections) {
    out += fmt::format("{:-^50}\n", header);
    row(fmt::format("Mean {} (ms):", name), num(d->mean));
    row(fmt::format("Median {} (ms):", name), num(d->median));
    for (const auto& [p, v] : d->percentiles)
      row(fmt::format("P{} {} (ms):", PercentileWord(p), name), num(v));
  }
  int shown = 0;
  for (const RequestRecord& r : level.records) {
    if (r.success || shown >= 3) continue;
    if (shown++ == 0) out += fmt::format("{:-^50}\n", "Errors (first 3)");
    out += r.error + "\n";
  }
  out += fmt::format("{:=^50}\n", "");
  return out;
}

}  // namespace k3::client
