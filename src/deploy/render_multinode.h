// Multi-node serving groups on the platforms that are not plain LeaderWorkerSet targets:
//   - PAI-EAS distributed inference: one service instance spans a "unit" of N instances; EAS numbers
//     them through RANK_ID (0 = the instance that takes the traffic), names instance 0 in
//     MASTER_ADDRESS and the interface for rank traffic in COMM_IFNAME (docs/deploy.md lists the fields
//     and their sources). Both engines run one process per instance: vLLM with its own multi-node
//     launcher (--nnodes / --node-rank / --master-addr, --headless off instance 0), k3 with the same
//     flags (docs/distributed.md).
//   - ACK: a group of several nodes is a LeaderWorkerSet over the OSS weights volume.
#pragma once

#include <string>
#include <vector>

#include "src/deploy/render.h"

namespace k3::deploy {

// The EAS `script` of a unit of ctx.plan.layout.nodes instances: `bash -c '...'` that checks the
// variables EAS injects and starts the engine for this instance's RANK_ID. `model_dir` is the mount
// the engine reads.
std::string EasUnitScript(const RenderContext& ctx, const std::string& model_dir);

// ACK with a group of several nodes: the LeaderWorkerSet (+ Service) that mounts the OSS volume `pvc`
// at `model_dir` on every pod of the group, the file names and apply / cleanup steps around it.
struct AckGroupFiles {
  std::vector<RenderedFile> files;
  std::vector<std::string> apply;  // after the OSS Secret and weights.yaml
  std::string cleanup;             // `run ...` lines, before the weights volume is deleted
};
// Installs the LeaderWorkerSet controller: the release whose CRD ../shared/schemas validates against.
inline constexpr const char* kLwsInstall =
    "kubectl apply --server-side -f https://github.com/kubernetes-sigs/lws/releases/download/v0.10.0/"
    "manifests.yaml";
AckGroupFiles AckLeaderWorkerSet(const RenderContext& ctx, const std::string& pvc,
                                 const std::string& model_dir);

}  // namespace k3::deploy
