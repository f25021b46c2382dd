// The output folder of `k3 render`: a folder that holds files the render would not write (a previous
// render's gateway.yaml, weights.yaml, ...) is refused, since cleanup.sh and `kubectl apply -f DIR` would
// meet them; with --force those files are deleted first. Sub-folders are never deleted.
#pragma once

#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/deploy/render.h"

namespace k3::deploy {

// Creates `dir` if needed; checks (or with `force` removes) what it holds beyond `files`. Returns the
// removed names (sorted). Errors name every stray entry and --force.
Result<std::vector<std::string>> PrepareOutputDir(const std::string& dir,
                                                  const std::vector<RenderedFile>& files, bool force);

}  // namespace k3::deploy
