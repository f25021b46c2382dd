// Progress of `k3 weights sync`: a bar redrawn in place on a terminal (at most 10 times a second), or a
// log line every few seconds otherwise, with bytes done / total, the transfer rate and the ETA.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

#include "src/weights/sync.h"

namespace k3::weights {

// "[#######-------------]  1.20 GiB / 3.40 GiB  45.6 MiB/s  ETA 0:00:49  3/10 files  model-00001.safetensors"
std::string RenderTransferLine(const SyncProgress& progress, double elapsed_s);

// "1.20 GiB"
std::string HumanBytes(uint64_t bytes);

class TransferProgressPrinter {
 public:
  // terminal: redraw one line with '\r'; otherwise print a line every log_interval_s.
  TransferProgressPrinter(std::FILE* out, bool terminal, double log_interval_s = 5.0);
  // Always returns true (never stops the sync).
  bool Update(const SyncProgress& progress);
  // Prints the final state (ends the terminal line).
  void Finish(const SyncProgress& progress);

 private:
  std::FILE* out_;
  bool terminal_;
  double log_interval_s_;
  std::chrono::steady_clock::time_point start_, last_print_;
  bool printed_ = false;
};

}  // namespace k3::weights
