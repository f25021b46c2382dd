// k3 verify: the guide's deployment checklist (--suite guide, the default) or the vendor verifier's
// pre-flight checks (--suite vendor) against an OpenAI-compatible endpoint. Flags -> client::RunVerify /
// RunVendorVerify / FormatVerifyReport; the exit code is the number of failed checks.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "apps/k3/commands.h"
#include "src/base/file.h"
#include "src/client/vendor_verify.h"
#include "src/client/verify.h"
#include "src/client/verify_report.h"
#include "src/image/config.h"
#include "src/tokenizer/tokenizer.h"

namespace k3::app {

void RegisterVerifyCommand(CLI::App& app) {
  struct Flags {
    std::string endpoint;
    std::string api_key;
    std::string model;
    int64_t long_context = 4096;
    std::string format = "table";
    double timeout_s = 120;
    bool insecure = false;
    bool no_vision = false;
    std::string image_processor;
    std::string suite = "guide";
    std::string tokenizer;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "verify", "Run the deployment checklist (or the vendor suite) against an OpenAI-compatible endpoint");
  cmd->add_option("--endpoint", flags->endpoint,
                  "base URL, e.g. http://localhost:8000 (a trailing /v1 is fine)")
      ->required();
  cmd->add_option("--api-key", flags->api_key,
                  "sent as 'Authorization: Bearer KEY' (default: $OPENAI_API_KEY)")
      ->envname("OPENAI_API_KEY");
  cmd->add_option("--model", flags->model, "model name (default: the first one /v1/models lists)");
  cmd->add_option("--long-context", flags->long_context, "prompt tokens of the long-context check")
      ->capture_default_str();
  cmd->add_option("--format", flags->format, "table | json | junit")->capture_default_str();
  cmd->add_option("--timeout", flags->timeout_s, "seconds per request")->capture_default_str();
  cmd->add_flag("--insecure", flags->insecure,
                "accept TLS certificates that do not verify (self-signed tests)");
  cmd->add_flag("--no-vision", flags->no_vision,
                "skip the vision check (two generated images; their prompt tokens against the reference "
                "processor's count)");
  cmd->add_option("--image-processor", flags->image_processor,
                  "the model's preprocessor_config.json for the vision check (default: Kimi K3's values)");
  cmd->add_option("--suite", flags->suite,
                  "guide: the deployment checklist | vendor: the vendor verifier's pre-flight checks (tool "
                  "arguments against schemas, K3 feature contracts, prompt token counts, stream usage, "
                  "finish reasons)")
      ->capture_default_str();
  cmd->add_option("--tokenizer", flags->tokenizer,
                  "--suite vendor: the served model's DIR with tiktoken.model + tokenizer_config.json, for "
                  "k3's reference prompt-token counts; without it the counts come from "
                  "/v1/chat/completions/render or are skipped");
  cmd->callback([flags] {
    auto format = client::ParseReportFormat(flags->format);
    if (!format.ok()) return FailCommand("verify", format.status().message(), 2);
    auto endpoint = client::ParseEndpoint(flags->endpoint, flags->api_key);
    if (!endpoint.ok()) return FailCommand("verify", endpoint.status().message(), 2);
    if (flags->long_context < 64) return FailCommand("verify", "--long-context must be at least 64", 2);
    if (flags->suite != "guide" && flags->suite != "vendor") {
      return FailCommand("verify", "--suite '" + flags->suite + "': expected guide or vendor", 2);
    }
    if (!flags->tokenizer.empty() && flags->suite != "vendor") {
      return FailCommand("verify", "--tokenizer is for --suite vendor", 2);
    }
    client::VerifyOptions options;
    if (!flags->image_processor.empty()) {
      auto text = ReadFileToString(flags->image_processor);
      if (!text.ok()) return FailCommand("verify", "--image-processor: " + text.status().message(), 2);
      auto config = image::ParseProcessorConfig(*text, flags->image_processor);
      if (!config.ok()) return FailCommand("verify", config.status().message(), 2);
      options.image_processor = *config;
    }
    options.vision = !flags->no_vision;
    options.endpoint = *endpoint;
    options.model = flags->model;
    options.long_context = flags->long_context;
    options.http.timeout_s = flags->timeout_s;
    options.http.verify_tls = !flags->insecure;
    std::optional<tokenizer::Tokenizer> reference_tokenizer;
    if (!flags->tokenizer.empty()) {
      const std::string& dir = flags->tokenizer;
      auto loaded = tokenizer::Tokenizer::LoadFromDirectory(dir);
      if (!loaded.ok()) {
        return FailCommand("verify",
                           "--tokenizer " + dir + ": " + loaded.status().message() +
                               " (give the model directory holding tiktoken.model and tokenizer_config.json)",
                           2);
      }
      reference_tokenizer = std::move(*loaded);
    }
    client::VerifyReport report;
    if (flags->suite == "vendor") {
      client::VendorOptions vendor;
      vendor.verify = options;
      vendor.tokenizer = reference_tokenizer ? &*reference_tokenizer : nullptr;
      report = client::RunVendorVerify(vendor);
    } else {
      report = client::RunVerify(options);
    }
    std::fputs(client::FormatVerifyReport(report, *format).c_str(), stdout);
    CommandExitCode() = report.failures();
  });
}

}  // namespace k3::app
