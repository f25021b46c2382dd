// Inference Gateway stack for the Kubernetes targets (--gateway): InferencePool over the serving pods, the
// upstream endpoint picker (Deployment, Service, ServiceAccount, Role/RoleBinding, plugin ConfigMap; image
// pinned by tag), InferenceObjective, Gateway and HTTPRoute, with the gateway class of the target: GKE's
// managed class on gcp-gke, a selectable implementation (kgateway or Istio) elsewhere. The picker scrapes
// the vllm:* metrics that vLLM and `k3 serve` both export, so it balances either engine.
#pragma once

#include <string>
#include <vector>

#include "src/deploy/render.h"

namespace k3::deploy {

// Gateway API Inference Extension release the objects and the picker image come from.
inline constexpr const char* kGaieVersion = "v1.5.0";

// "gke" on gcp-gke, else options.gateway_impl ("kgateway" when empty). Errors name --gateway-impl.
Result<std::string> GatewayImplementation(const RenderContext& ctx);

// The gatewayClassName of an implementation: gke-l7-regional-external-managed, kgateway, istio.
std::string GatewayClassName(const std::string& implementation);

// Every object of gateway.yaml, in apply order.
std::vector<Doc> GatewayObjects(const RenderContext& ctx);

// Shell lines that install the CRDs and the implementation (for setup-cluster.sh or NOTES.md).
std::vector<std::string> GatewayInstallCommands(const RenderContext& ctx);

}  // namespace k3::deploy
