// k3 weights ls | sync | verify: checkpoints in object storage (file paths, s3://, gs://, oss://, az://, and
// hf:// as a source). Flags -> storage::OpenObjectStore + weights::SyncWeights / VerifyWeights; prints what
// happened.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "apps/k3/commands.h"
#include "apps/k3/s3_flags.h"
#include "src/storage/open_store.h"
#include "src/weights/sync.h"
#include "src/weights/transfer_progress.h"
#include "src/weights/verify.h"

namespace k3::app {
namespace {

// Flags every weights subcommand shares: S3 settings (over the environment's), the Azure block size and
// read parallelism. Azure's endpoint and credentials come from the environment (azure_credentials.h).
struct StoreFlags {
  S3Flags s3;
  uint64_t part_size_mib = 16;
  uint64_t az_block_size_mib = 16;
  int concurrency = 8;
  uint64_t chunk_mib = 8;
  uint64_t max_inflight_mib = 256;

  void Add(CLI::App* cmd) {
    s3.Add(cmd);
    cmd->add_option("--s3-part-size-mib", part_size_mib, "multipart upload part size (S3 needs >= 5)")
        ->capture_default_str();
    cmd->add_option("--az-block-size-mib", az_block_size_mib, "Azure block size of large uploads (Put Block)")
        ->capture_default_str();
    cmd->add_option("--concurrency", concurrency, "ranged requests in flight")->capture_default_str();
    cmd->add_option("--chunk-mib", chunk_mib, "bytes per ranged request")->capture_default_str();
    cmd->add_option("--max-inflight-mib", max_inflight_mib, "memory for fetched but unwritten bytes")
        ->capture_default_str();
  }

  storage::ParallelReadOptions Read() const {
    storage::ParallelReadOptions read;
    read.concurrency = concurrency;
    read.chunk_bytes = chunk_mib << 20;
    read.max_inflight_bytes = max_inflight_mib << 20;
    return read;
  }

  Result<std::unique_ptr<storage::ObjectStore>> Open(const std::string& text) const {
    if (concurrency < 1 || chunk_mib < 1 || max_inflight_mib < 1 || part_size_mib < 1 ||
        az_block_size_mib < 1) {
      return InvalidArgument(
          "--concurrency, --chunk-mib, --max-inflight-mib, --s3-part-size-mib and --az-block-size-mib must "
          "be "
          ">= 1");
    }
    K3_ASSIGN_OR_RETURN(storage::ObjectUri uri, storage::ParseObjectUri(text));
    const storage::EnvLookup env = storage::ProcessEnvironment();
    storage::StoreOptions options;
    options.s3 = s3.Options(env);
    options.s3->part_size = part_size_mib << 20;
    options.azure = storage::AzureOptions{};
    options.azure->block_size = az_block_size_mib << 20;
    return storage::OpenObjectStore(uri, options, env);
  }
};

void RegisterLs(CLI::App* weights) {
  struct Flags {
    std::string uri;
    StoreFlags store;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = weights->add_subcommand("ls", "List the objects below a location, with sizes");
  cmd->add_option("uri", flags->uri,
                  "local path, file://, s3://, gs://, oss://bucket/prefix, az://account/container/prefix, "
                  "hf://org/repo")
      ->required();
  flags->store.Add(cmd);
  cmd->callback([flags] {
    auto store = flags->store.Open(flags->uri);
    if (!store.ok()) return FailCommand("weights ls", store.status().message(), 2);
    auto list = (*store)->List("");
    if (!list.ok()) return FailCommand("weights ls", list.status().message());
    uint64_t total = 0;
    for (const storage::ObjectInfo& info : *list) {
      std::printf("%14llu  %s\n", static_cast<unsigned long long>(info.size), info.key.c_str());
      total += info.size;
    }
    std::printf("%zu objects, %s (%llu bytes) in %s\n", list->size(), weights::HumanBytes(total).c_str(),
                static_cast<unsigned long long>(total), (*store)->Describe().c_str());
  });
}

void RegisterSync(CLI::App* weights) {
  struct Flags {
    std::string source, destination;
    std::string progress = "auto";
    bool no_resume = false;
    bool delete_extraneous = false;
    bool dry_run = false;
    StoreFlags store;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = weights->add_subcommand(
      "sync",
      "Copy a checkpoint between locations: skips identical files, resumes partial ones, writes "
      "k3-manifest.json last");
  cmd->add_option("source", flags->source, "where the checkpoint is")->required();
  cmd->add_option("destination", flags->destination, "where it goes")->required();
  cmd->add_option("--progress", flags->progress,
                  "auto | bar | log | none (auto: a bar on a terminal, log lines otherwise)")
      ->check(CLI::IsMember({"auto", "bar", "log", "none"}))
      ->capture_default_str();
  cmd->add_flag("--no-resume", flags->no_resume, "start partial files over instead of resuming them");
  cmd->add_flag("--delete", flags->delete_extraneous,
                "remove files in the destination that the source does not have (after copying)");
  cmd->add_flag("--dry-run", flags->dry_run,
                "check the command line (both locations parse, the destination is writable) and exit; no "
                "request is sent (k3 render's tests run every rendered sync this way)");
  flags->store.Add(cmd);
  cmd->callback([flags] {
    if (flags->dry_run) {
      auto source = storage::ParseObjectUri(flags->source);
      if (!source.ok()) return FailCommand("weights sync", source.status().message(), 2);
      auto destination = storage::ParseObjectUri(flags->destination);
      if (!destination.ok()) return FailCommand("weights sync", destination.status().message(), 2);
      if (destination->scheme == storage::UriScheme::kHuggingFace) {
        return FailCommand("weights sync",
                           fmt::format("{}: the Hugging Face Hub is read-only here; sync from it, not to it",
                                       destination->text),
                           2);
      }
      std::printf("command line ok: weights sync %s -> %s\n", source->Describe().c_str(),
                  destination->Describe().c_str());
      return;
    }
    auto source = flags->store.Open(flags->source);
    if (!source.ok()) return FailCommand("weights sync", source.status().message(), 2);
    auto destination = flags->store.Open(flags->destination);
    if (!destination.ok()) return FailCommand("weights sync", destination.status().message(), 2);
    const bool terminal = ::isatty(::fileno(stderr)) == 1;
    const bool bar = flags->progress == "bar" || (flags->progress == "auto" && terminal);
    weights::TransferProgressPrinter printer(stderr, bar);
    weights::SyncProgress last;
    weights::SyncOptions options;
    options.read = flags->store.Read();
    options.resume = !flags->no_resume;
    options.delete_extraneous = flags->delete_extraneous;
    options.source_description = (*source)->Describe();
    if (flags->progress != "none") {
      options.on_progress = [&](const weights::SyncProgress& progress) {
        last = progress;
        return printer.Update(progress);
      };
    }
    auto report = weights::SyncWeights(**source, **destination, options);
    if (flags->progress != "none") printer.Finish(last);
    if (!report.ok()) return FailCommand("weights sync", report.status().message());
    std::printf(
        "synced %s -> %s: %d copied, %d already there%s; %s transferred (%llu bytes), %s resumed, %s "
        "skipped\n",
        (*source)->Describe().c_str(), (*destination)->Describe().c_str(), report->files_copied,
        report->files_skipped,
        flags->delete_extraneous ? fmt::format(", {} deleted", report->files_deleted).c_str() : "",
        weights::HumanBytes(report->bytes_transferred).c_str(),
        static_cast<unsigned long long>(report->bytes_transferred),
        weights::HumanBytes(report->bytes_resumed).c_str(),
        weights::HumanBytes(report->bytes_skipped).c_str());
  });
}

void RegisterVerify(CLI::App* weights) {
  struct Flags {
    std::string uri;
    bool checksums = false;
    StoreFlags store;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = weights->add_subcommand(
      "verify",
      "Check a synced checkpoint: manifest sizes, safetensors headers, the shard index (and checksums)");
  cmd->add_option("uri", flags->uri,
                  "local path, file://, s3://, gs://, oss://bucket/prefix, az://account/container/prefix, "
                  "hf://org/repo")
      ->required();
  cmd->add_flag("--checksums", flags->checksums,
                "also recompute every file's SHA-256 (reads the whole checkpoint)");
  flags->store.Add(cmd);
  cmd->callback([flags] {
    auto store = flags->store.Open(flags->uri);
    if (!store.ok()) return FailCommand("weights verify", store.status().message(), 2);
    weights::VerifyOptions options;
    options.checksums = flags->checksums;
    options.read = flags->store.Read();
    auto report = weights::VerifyWeights(**store, options);
    if (!report.ok()) return FailCommand("weights verify", report.status().message());
    for (const std::string& problem : report->problems) std::printf("problem: %s\n", problem.c_str());
    const std::string summary = fmt::format(
        "{} files in the manifest, {} safetensors headers ({} tensors){}", report->files_checked,
        report->headers_checked, report->tensors_checked,
        flags->checksums ? fmt::format(", {} hashed", weights::HumanBytes(report->bytes_hashed)) : "");
    if (!report->ok()) {
      return FailCommand("weights verify", fmt::format("{}: {} problems; {}", (*store)->Describe(),
                                                       report->problems.size(), summary));
    }
    std::printf("ok: %s: %s\n", (*store)->Describe().c_str(), summary.c_str());
  });
}

}  // namespace

void RegisterWeightsCommand(CLI::App& app) {
  CLI::App* weights = app.add_subcommand("weights", "Checkpoints in object storage: ls, sync, verify");
  weights->require_subcommand(1);
  RegisterLs(weights);
  RegisterSync(weights);
  RegisterVerify(weights);
}

}  // namespace k3::app
