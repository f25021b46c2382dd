// Transfer progress rendering (transfer_progress.h).
#include "src/weights/transfer_progress.h"

#include <fmt/format.h>

#include <algorithm>

namespace k3::weights {

std::string HumanBytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.2f} {}", value, kUnits[unit]);
}

std::string RenderTransferLine(const SyncProgress& progress, double elapsed_s) {
  constexpr int kWidth = 20;
  const double fraction = progress.total_bytes == 0 ? 1.0
                                                    : static_cast<double>(progress.done_bytes) /
                                                          static_cast<double>(progress.total_bytes);
  const int filled = std::clamp(static_cast<int>(fraction * kWidth), 0, kWidth);
  const double rate = elapsed_s > 0 ? static_cast<double>(progress.transferred_bytes) / elapsed_s : 0.0;
  std::string eta = "--:--:--";
  if (rate > 0 && progress.total_bytes >= progress.done_bytes) {
    const auto seconds =
        static_cast<uint64_t>(static_cast<double>(progress.total_bytes - progress.done_bytes) / rate);
    eta = fmt::format("{}:{:02}:{:02}", seconds / 3600, seconds / 60 % 60, seconds % 60);
  }
  return fmt::format("[{}{}]  {} / {}  {}/s  ETA {}  {}/{} files{}{}", std::string(filled, '#'),
                     std::string(kWidth - filled, '-'), HumanBytes(progress.done_bytes),
                     HumanBytes(progress.total_bytes), HumanBytes(static_cast<uint64_t>(rate)), eta,
                     progress.files_done, progress.files_total, progress.current.empty() ? "" : "  ",
                     progress.current);
}

TransferProgressPrinter::TransferProgressPrinter(std::FILE* out, bool terminal, double log_interval_s)
    : out_(out),
      terminal_(terminal),
      log_interval_s_(log_interval_s),
      start_(std::chrono::steady_clock::now()),
      last_print_(start_) {}

bool TransferProgressPrinter::Update(const SyncProgress& progress) {
  const auto now = std::chrono::steady_clock::now();
  const double since_print = std::chrono::duration<double>(now - last_print_).count();
  if (since_print < (terminal_ ? 0.1 : log_interval_s_)) return true;
  last_print_ = now;
  const std::string line = RenderTransferLine(progress, std::chrono::duration<double>(now - start_).count());
  if (terminal_) {
    std::fprintf(out_, "\r%s\033[K", line.c_str());
  } else {
    std::fprintf(out_, "sync: %s\n", line.c_str());
  }
  std::fflush(out_);
  printed_ = true;
  return true;
}

void TransferProgressPrinter::Finish(const SyncProgress& progress) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  SyncProgress done = progress;
  done.current.clear();
  const std::string line = RenderTransferLine(done, elapsed);
  if (terminal_) {
    std::fprintf(out_, "\r%s\033[K\n", line.c_str());
  } else if (printed_) {
    std::fprintf(out_, "sync: %s\n", line.c_str());
  }
  std::fflush(out_);
}

}  // namespace k3::weights
