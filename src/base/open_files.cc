// RaiseOpenFilesLimit (open_files.h).
#include "src/base/open_files.h"

#include <sys/resource.h>

#include <fstream>

namespace k3 {

OpenFilesLimit RaiseOpenFilesLimit() {
  OpenFilesLimit out;
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return out;
  out.before = out.soft = lim.rlim_cur;
  out.hard = lim.rlim_max;
  rlim_t target = lim.rlim_max;
  if (target == RLIM_INFINITY) {  // the kernel refuses more than fs.nr_open descriptors
    uint64_t nr_open = 1 << 20;
    std::ifstream("/proc/sys/fs/nr_open") >> nr_open;
    target = static_cast<rlim_t>(nr_open);
  }
  if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < target) {
    rlimit raised = lim;
    raised.rlim_cur = target;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) {
      out.soft = target;
      out.raised = true;
    }
  }
  return out;
}

}  // namespace k3
