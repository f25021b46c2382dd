// Kubernetes building blocks shared by the target renderers: standard labels, probes derived from the
// plan, /dev/shm, the weights cache volume, engine containers and the weight pre-sync Job.
#pragma once

#include <string>
#include <vector>

#include "src/deploy/render.h"

namespace k3::deploy {

// app.kubernetes.io/{name,instance,version,component,managed-by}.
Doc StandardLabels(const RenderContext& ctx, const std::string& component);

// metadata {name, [namespace], labels}.
Doc ObjectMeta(const RenderContext& ctx, const std::string& name, const std::string& component);

// --namespace: " -n NS" for kubectl lines of NOTES.md and scripts ("" without --namespace).
std::string KubectlNamespace(const RenderContext& ctx);

// --namespace: namespace.yaml (the Namespace object, applied first and deleted last); none without it.
std::vector<RenderedFile> NamespaceFile(const RenderContext& ctx);

// A cloud region name: lowercase letters, digits and '-' ("us-east-1", "cn-hangzhou").
bool ValidRegion(const std::string& region);

// Probes on /health of the serving port, budgets from the plan (ProbeBudget).
Doc StartupProbe(const RenderContext& ctx);
Doc ReadinessProbe(const RenderContext& ctx);
Doc LivenessProbe(const RenderContext& ctx);

// {"nvidia.com/gpu": N} as the guide writes it: a string in pod specs.
Doc GpuResources(int gpus);

// A CPU-only node's pod (k3 plan on a CPU instance): no GPU; requests the planned RAM of the node's ranks
// (weights shards are mmap'd, and their page cache counts against the pod's memory) and 90 % of its vCPUs,
// limited to the node's usable RAM, so one serving pod takes one node.
Doc CpuResources(const RenderContext& ctx);

// GpuResources(GPUs per node), or CpuResources on a CPU-only plan.
Doc ServingResources(const RenderContext& ctx);

// Volumes: the weights cache PVC ("model-cache") and the /dev/shm emptyDir ("dshm").
std::string WeightsClaimName(const RenderContext& ctx);
Doc WeightsVolume(const RenderContext& ctx);
Doc ShmVolume(int gpus_per_node);
Doc WeightsAndShmMounts(const RenderContext& ctx);  // /dev/shm only when ctx.stream_weights

// Env list [{name, value}] for the engine: the model's required variables, HF_HOME for hub pulls, and
// NCCL / Gloo interface settings when the group spans nodes.
Doc EngineEnvList(const RenderContext& ctx, bool multi_node);

// --target k8s with s3:// weights (no cloud identity to rely on): the Secret holding AWS_ACCESS_KEY_ID /
// AWS_SECRET_ACCESS_KEY that NOTES.md creates, and the envFrom that reads it ([] elsewhere).
std::string BucketCredentialsSecret(const RenderContext& ctx);
Doc BucketCredentialsEnvFrom(const RenderContext& ctx);

// The uid / gid the k3 image runs as (Dockerfile: `useradd --uid 1000 k3`, USER k3).
inline constexpr int kK3ImageUid = 1000;

// The pod securityContext of a pod that writes or reads the weights volume: with the k3 image (uid 1000)
// fsGroup 1000, so a fresh volume (EBS / PD root is root 0755) is group-writable by it; none for vLLM's
// images (root). Empty object = none.
Doc WeightsPodSecurityContext(const RenderContext& ctx);

// The weights PVC's size in GiB (one copy of the checkpoint with headroom).
int64_t WeightsPvcGib(const RenderContext& ctx);

// The read throughput of the weights volume the engine loads from, in bytes per second, where the rendered
// storage caps it below any NIC (0 = no known cap), and why. Azure Files premium (provisioned v1):
// 100 + ceil(0.04 x GiB) + ceil(0.06 x GiB) MiB/s; an EBS volume of the EKS default class: 125 MiB/s
// (gp3's baseline; gp2 tops out at 250 MiB/s).
double WeightsVolumeReadBps(const RenderContext& ctx, std::string& why);

// A PersistentVolumeClaim for the weights (ReadWriteMany, sized from the checkpoint with headroom).
Doc WeightsPvc(const RenderContext& ctx, const std::string& storage_class);

// huggingface_hub release the hub pre-sync installs (1.x: `hf download`).
inline constexpr const char* kHuggingFaceHubVersion = "1.30.0";

// A Job that fills the weights PVC at ctx.model_dir from the weights source (hub or object store): with
// --engine k3 `k3 weights sync SOURCE DIR` from the k3 image, with --engine vllm (hub weights only:
// vLLM streams object-store weights) `hf download`. With --engine k3 and streamed weights
// (ctx.stream_weights) it fills the bucket instead, `k3 weights sync hf://MODEL BUCKET`, with no volume.
Doc PresyncJob(const RenderContext& ctx);

// The LoadBalancer Service for the serving port; `selector` picks the pods (LWS: leader only).
Doc ServingService(const RenderContext& ctx, const Doc& selector);

}  // namespace k3::deploy
