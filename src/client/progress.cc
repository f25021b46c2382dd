// ProgressBar drawing.
#include "src/client/progress.h"

#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

namespace k3::client {

bool IsTerminal(std::FILE* file) { return ::isatty(::fileno(file)) == 1; }

ProgressBar::ProgressBar(std::FILE* out, int total, std::string label, bool enabled)
    : out_(out),
      total_(total),
      label_(std::move(label)),
      enabled_(enabled),
      start_(std::chrono::steady_clock::now()),
      last_draw_() {}

std::string ProgressBar::Render(const std::string& label, int total, int done, int failed, double elapsed_s) {
  const double rate = elapsed_s > 0 ? done / elapsed_s : 0;
  std::string line = label + "  ";
  if (total > 0) {
    constexpr int kWidth = 30;
    const int filled = std::min(kWidth, done * kWidth / total);
    line += "[" + std::string(filled, '#') + std::string(kWidth - filled, '-') + "]  ";
    line += fmt::format("{}/{}", done, total);
  } else {
    line += fmt::format("{} done", done);
  }
  line +=
      fmt::format("  {:.1f} s  {:.1f} req/s  {} error{}", elapsed_s, rate, failed, failed == 1 ? "" : "s");
  return line;
}

void ProgressBar::Update(int done, int failed) {
  done_ = done;
  failed_ = failed;
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (done != total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  std::fprintf(out_, "\r%s\033[K", Render(label_, total_, done, failed, elapsed).c_str());
  std::fflush(out_);
}

void ProgressBar::Finish() {
  if (!enabled_) return;
  last_draw_ = {};
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(out_, "\r%s\033[K\n", Render(label_, total_, done_, failed_, elapsed).c_str());
  std::fflush(out_);
}

}  // namespace k3::client
