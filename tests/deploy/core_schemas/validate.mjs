// Validates rendered Kubernetes objects against the upstream OpenAPI schemas that kubernetes-models
// (core kinds) and @kubernetes-models/gateway-api (Gateway, HTTPRoute) are generated from. The pod
// templates inside LeaderWorkerSets and the KServe predictor are validated as Pods, so every container of
// every rendered workload is checked against the core schema too. Custom resources themselves (LWS,
// InferencePool, InferenceObjective, InferenceService, InferenceEndpointConfig) are validated against
// ../shared/schemas by tests/deploy/crd_test.cc.
//
//   node validate.mjs FILE.yaml...     prints one line per file; exit 1 on any invalid object
import fs from "node:fs";
import YAML from "yaml";

const GATEWAY_GROUP = "gateway.networking.k8s.io/";
const CUSTOM = new Set([
  "leaderworkerset.x-k8s.io/v1/LeaderWorkerSet",
  "inference.networking.k8s.io/v1/InferencePool",
  "inference.networking.x-k8s.io/v1alpha2/InferenceObjective",
  "serving.kserve.io/v1beta1/InferenceService",
  "inference.sagemaker.aws.amazon.com/v1/InferenceEndpointConfig",
]);

// GKE's gateway policies (HealthCheckPolicy, GCPBackendPolicy) are CRDs GKE installs, Azure ML's
// InstanceType one its cluster extension installs; no schema of them is pinned here, so they are counted
// as unvalidated instead of failing or passing silently.
const NO_SCHEMA = new Set(["networking.gke.io/v1/HealthCheckPolicy", "networking.gke.io/v1/GCPBackendPolicy",
                           "amlarc.azureml.com/v1alpha1/InstanceType"]);
let unvalidated = 0;
// The add-ons' custom resources (k3 render --autoscale / --monitoring) are validated against their CRDs in
// tests/deploy/crds by `k3 lint --schema-dir` (rendered_test.py) and render_ops_test.cc.
const CRD_CHECKED_ELSEWHERE = new Set(["keda.sh/v1alpha1/ScaledObject", "monitoring.coreos.com/v1/PodMonitor",
                                       "monitoring.googleapis.com/v1/PodMonitoring"]);
let elsewhere = 0;

async function modelClass(apiVersion, kind) {
  const pkg = apiVersion.startsWith(GATEWAY_GROUP) ? "@kubernetes-models/gateway-api" : "kubernetes-models";
  const mod = await import(`${pkg}/${apiVersion}/${kind}`);
  return mod[kind];
}

// The pod templates a custom resource carries: [where, {metadata, spec}].
function podTemplates(o) {
  const kind = `${o.apiVersion}/${o.kind}`;
  if (kind === "leaderworkerset.x-k8s.io/v1/LeaderWorkerSet") {
    const t = o.spec.leaderWorkerTemplate;
    return [["leaderTemplate", t.leaderTemplate], ["workerTemplate", t.workerTemplate]].filter((x) => x[1]);
  }
  if (kind === "serving.kserve.io/v1beta1/InferenceService") {
    const p = o.spec.predictor;
    const out = [["predictor", { spec: { containers: p.containers, volumes: p.volumes } }]];
    if (p.workerSpec) out.push(["workerSpec", { spec: { containers: p.workerSpec.containers, volumes: p.volumes } }]);
    return out;
  }
  return [];
}

async function validate(object) {
  const Model = await modelClass(object.apiVersion, object.kind);
  new Model(object).validate();
}

let invalid = 0;
let checked = 0;
const perKind = new Map();
for (const file of process.argv.slice(2)) {
  for (const doc of YAML.parseAllDocuments(fs.readFileSync(file, "utf8"))) {
    const o = doc.toJSON();
    if (!o || !o.apiVersion || !o.kind) continue;  // not a Kubernetes object (Azure ML YAML)
    const key = `${o.apiVersion}/${o.kind}`;
    const targets = [];
    if (NO_SCHEMA.has(key)) {
      unvalidated += 1;
      continue;
    }
    if (CRD_CHECKED_ELSEWHERE.has(key)) {
      elsewhere += 1;
      continue;
    }
    if (CUSTOM.has(key)) {
      for (const [where, t] of podTemplates(o)) {
        targets.push([`${key} ${o.metadata.name} ${where} (as a Pod)`,
                      { apiVersion: "v1", kind: "Pod", metadata: t.metadata ?? {}, spec: t.spec }]);
      }
    } else {
      targets.push([`${key} ${o.metadata?.name}`, o]);
    }
    for (const [label, object] of targets) {
      try {
        await validate(object);
        checked += 1;
        perKind.set(object.kind, (perKind.get(object.kind) ?? 0) + 1);
      } catch (e) {
        invalid += 1;
        console.log(`INVALID ${file}: ${label}: ${String(e.message).slice(0, 1200)}`);
      }
    }
  }
}
const kinds = [...perKind.entries()].map(([k, n]) => `${n} ${k}`).join(", ");
console.log(`core schemas: ${checked} objects valid (${kinds}), ${invalid} invalid, ` +
            `${unvalidated} GKE policy / Azure ML InstanceType objects not validated (no schema pinned), ` +
            `${elsewhere} autoscaler / scrape objects left to their CRDs (tests/deploy/crds)`);
process.exit(invalid > 0 ? 1 : 0);
