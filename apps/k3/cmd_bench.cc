// k3 bench: a load-generator sweep over concurrency levels against an OpenAI-compatible endpoint.
// Flags -> client::RunBench; prints vLLM-style summaries, writes vLLM-keyed JSON and an SVG chart.
#include <cstdio>
#include <limits>
#include <memory>
#include <string>

#include "apps/k3/commands.h"
#include "src/base/file.h"
#include "src/client/bench.h"
#include "src/client/bench_plot.h"
#include "src/client/progress.h"

namespace k3::app {

void RegisterBenchCommand(CLI::App& app) {
  struct Flags {
    std::string endpoint;
    std::string api_key;
    std::string model;
    std::string concurrency = "1,4,16,64";
    int num_prompts = 100;
    int input_len = 256;
    int output_len = 128;
    double prefix_share = 0;
    std::string dataset;
    double request_rate = std::numeric_limits<double>::infinity();
    double duration_s = 0;
    std::string out;
    std::string plot;
    bool ignore_eos = false;
    double timeout_s = 600;
    bool insecure = false;
    uint64_t seed = 0;
    int images = 0;
    std::string image_size;
    std::string image_format = "jpeg";
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd =
      app.add_subcommand("bench", "Load-test an OpenAI-compatible endpoint: TTFT, TPOT, ITL, throughput");
  cmd->add_option("--endpoint", flags->endpoint, "base URL, e.g. http://localhost:8000")->required();
  cmd->add_option("--api-key", flags->api_key, "Bearer token (default: $OPENAI_API_KEY)")
      ->envname("OPENAI_API_KEY");
  cmd->add_option("--model", flags->model, "model name (default: the first one /v1/models lists)");
  cmd->add_option("--concurrency", flags->concurrency, "comma-separated levels, one run each")
      ->capture_default_str();
  cmd->add_option("--num-prompts", flags->num_prompts, "requests per level")->capture_default_str();
  cmd->add_option("--input-len", flags->input_len, "synthetic prompt length in filler words (about tokens)")
      ->capture_default_str();
  cmd->add_option("--output-len", flags->output_len, "max_tokens per request")->capture_default_str();
  cmd->add_option("--prefix-share", flags->prefix_share,
                  "fraction of the prompt shared by all requests (0..1)")
      ->capture_default_str();
  cmd->add_option("--dataset", flags->dataset,
                  "JSONL file: {\"prompt\": ...} or {\"messages\": [...]} per line");
  cmd->add_option("--request-rate", flags->request_rate, "Poisson arrivals per second (default: inf)");
  cmd->add_option("--duration", flags->duration_s,
                  "seconds per level (cycling through the prompts) instead of a count");
  cmd->add_option("--out", flags->out, "results JSON: one vLLM-style object per level, one per line");
  cmd->add_option("--plot", flags->plot, "SVG chart of latency against throughput, one point per level");
  cmd->add_flag("--ignore-eos", flags->ignore_eos,
                "send ignore_eos (vLLM) so every request makes --output-len tokens");
  cmd->add_option("--timeout", flags->timeout_s, "seconds per request")->capture_default_str();
  cmd->add_flag("--insecure", flags->insecure, "accept TLS certificates that do not verify");
  cmd->add_option("--seed", flags->seed, "seed of the prompts, images and arrivals")->capture_default_str();
  cmd->add_option("--images", flags->images,
                  "random images per request (vLLM random-mm style), sent as data: URLs before the text")
      ->capture_default_str();
  cmd->add_option("--image-size", flags->image_size, "WIDTHxHEIGHT of each --images image, e.g. 640x480");
  cmd->add_option("--image-format", flags->image_format, "jpeg | png: how the random images are encoded")
      ->capture_default_str();
  cmd->callback([flags] {
    auto endpoint = client::ParseEndpoint(flags->endpoint, flags->api_key);
    if (!endpoint.ok()) return FailCommand("bench", endpoint.status().message(), 2);
    auto levels = client::ParseConcurrencyList(flags->concurrency);
    if (!levels.ok()) return FailCommand("bench", levels.status().message(), 2);
    client::BenchOptions options;
    if (flags->images > 0 || !flags->image_size.empty()) {
      if (flags->images <= 0) return FailCommand("bench", "--image-size needs --images N (N >= 1)", 2);
      auto size = client::ParseImageSize(flags->image_size);
      if (!size.ok()) return FailCommand("bench", size.status().message(), 2);
      auto format = client::ParseImageFormat(flags->image_format);
      if (!format.ok()) return FailCommand("bench", format.status().message(), 2);
      options.workload.images = flags->images;
      options.workload.image_width = size->first;
      options.workload.image_height = size->second;
      options.workload.image_format = *format;
    } else if (flags->images < 0) {
      return FailCommand("bench", "--images must not be negative", 2);
    }
    options.endpoint = *endpoint;
    options.concurrency = *levels;
    options.workload.model = flags->model;
    options.workload.num_prompts = flags->num_prompts;
    options.workload.input_len = flags->input_len;
    options.workload.output_len = flags->output_len;
    options.workload.prefix_share = flags->prefix_share;
    options.workload.dataset = flags->dataset;
    options.workload.ignore_eos = flags->ignore_eos;
    options.workload.seed = flags->seed;
    options.request_rate = flags->request_rate;
    options.duration_s = flags->duration_s;
    options.http.timeout_s = flags->timeout_s;
    options.http.verify_tls = !flags->insecure;
    options.progress = client::IsTerminal(stderr) ? stderr : nullptr;
    auto run = client::RunBench(options);
    if (!run.ok()) return FailCommand("bench", run.status().message());
    std::string lines;
    int failed = 0;
    for (const client::BenchLevel& level : run->levels) {
      std::fputs(client::FormatBenchSummary(level, run->info).c_str(), stdout);
      lines += client::VllmResultJson(level, run->info)
                   .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      lines += '\n';
      failed += level.metrics.failed;
    }
    if (!flags->out.empty()) {
      Status s = WriteFileAtomic(flags->out, lines);
      if (!s.ok()) return FailCommand("bench", s.ToString());
    }
    if (!flags->plot.empty()) {
      const std::string title = "k3 bench: " + run->info.model + " at " + run->info.endpoint;
      Status s = WriteFileAtomic(flags->plot, client::LatencyThroughputSvg(run->levels, title));
      if (!s.ok()) return FailCommand("bench", s.ToString());
    }
    if (failed > 0)
      FailCommand("bench", std::to_string(failed) + " request(s) failed (see the errors above)");
  });
}

}  // namespace k3::app
