// A one-line progress bar for k3 bench, redrawn in place with '\r' at most ten times a second, and only
// when the output is a terminal (CI logs get the summaries alone).
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace k3::client {

bool IsTerminal(std::FILE* file);

class ProgressBar {
 public:
  // total <= 0: unknown (a --duration run): shows counts and elapsed time without a bar.
  ProgressBar(std::FILE* out, int total, std::string label, bool enabled);
  void Update(int done, int failed);
  void Finish();

  // The line for a state (for tests): "c=4  [#####-----]  50/100  12.5 req/s  0 errors".
  static std::string Render(const std::string& label, int total, int done, int failed, double elapsed_s);

 private:
  std::FILE* out_;
  int total_;
  std::string label_;
  bool enabled_;
  int done_ = 0, failed_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace k3::client
