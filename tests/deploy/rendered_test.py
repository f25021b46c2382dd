#!/usr/bin/env python3
"""Checks what `k3 render` writes the way a user would meet it, with the real tools.

Usage: rendered_test.py K3_BINARY

For every target x engine x weights scheme (x --gateway on the Kubernetes targets), rendered by the real
binary into a temporary directory:
  1. every shell script passes `bash -n` and `shellcheck` (skipped, with the reason printed, when
     shellcheck is not installed);
  2. every `k3` command line in a manifest is accepted by `k3 serve --dry-run`, under the LeaderWorkerSet
     environment for leader and worker pods;
  3. every core object (and each LWS / KServe pod template, as a Pod) validates against the upstream
     Kubernetes and Gateway API schemas (tests/deploy/core_schemas, pinned npm packages), when node and
     those packages are installed;
  4. the model path chain holds: the directory the weights are written to (pre-sync Job, mount, operator)
     is the directory the engine reads;
  5. the scripts and the NOTES.md apply steps run against stub cloud CLIs that record each invocation;
     every recorded `aws`, `az`, `gcloud` and `kubectl` invocation is then run by the real CLI inside a
     network namespace with no credentials, so it fails at credentials or network, never at parsing.
     Each outcome is classified; a usage error fails the test. Counts per CLI are printed.
  6. cleanup.sh, with the stub failing one resource, still deletes the others, reports the failure in its
     summary and exits non-zero.
Network: the real CLIs run under `unshare --net` (loopback only, down). Stubs exist only at this cloud
boundary; nothing else is mocked.
"""
import concurrent.futures
import json
import os
import queue
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

K3 = None
FAILURES = []

TARGETS = ["aws-eks", "aws-hyperpod", "azure-aks", "azure-ml", "gcp-gke", "gcp-vertex", "alibaba-ack",
           "alibaba-pai-eas", "k8s"]
KUBERNETES = {"aws-eks", "azure-aks", "gcp-gke", "k8s"}  # the serving pods are ours: gateway, PVC, Job
ONE_INSTANCE = {"azure-ml", "gcp-vertex", "alibaba-pai-eas"}  # a replica is one instance
SMALL_MODEL = ["--model", "kimi-linear-48b", "--max-model-len", "131072"]
# K3 on CPU machines (--engine k3 on a CPU-only instance): every cloud's CPU instance, and a two-node
# LeaderWorkerSet group of smaller ones on the generic target.
CPU_PLANS = [("aws-eks", "x2iedn.32xlarge"), ("aws-eks", "x8g.48xlarge"), ("azure-aks", "Standard_M176ds_4_v3"),
             ("gcp-gke", "m2-ultramem-208"), ("alibaba-ack", "ecs.re6.52xlarge"), ("k8s", "ecs.re6.26xlarge")]
CLOUD_CLIS = ["aws", "az", "gcloud", "kubectl"]
OTHER_TOOLS = ["helm", "istioctl", "docker", "eascmd", "arena", "terraform"]


def fail(what):
    FAILURES.append(what)
    print("FAIL: " + what)


def weight_schemes(target):
    """Each target's own bucket (its pods' cloud identity reads it), the hub, or OSS on Alibaba."""
    if target in ("azure-ml", "gcp-vertex"):
        return [""]
    if target in ("alibaba-ack", "alibaba-pai-eas"):
        return ["oss://kimi/Kimi-K3"]
    if target == "azure-aks":
        return ["", "az://kimi/models/Kimi-K3"]
    if target == "gcp-gke":
        return ["", "gs://my-bucket/Kimi-K3"]
    return ["", "s3://my-bucket/kimi-k3"]


def region_args(target):
    if target == "aws-hyperpod":
        return ["--region", "us-east-1"]
    if target in ("alibaba-ack", "alibaba-pai-eas"):
        return ["--region", "cn-hangzhou"]
    return []


def combinations():
    """(label, argv) for every combination the renderer accepts, and the ones it must refuse."""
    accepted, refused = [], []
    for target in TARGETS:
        for engine in ["vllm", "k3"]:
            base = ["--target", target, "--engine", engine] + region_args(target)
            if engine == "k3":
                base += ["--image", "registry.example/k3:test"]
            if target in ONE_INSTANCE or target == "alibaba-ack":
                base += SMALL_MODEL
            if engine == "k3" and target in ("azure-ml", "gcp-vertex"):
                refused.append((" ".join(base), base))
                continue
            for weights in weight_schemes(target):
                for gateway in ([False, True] if target in KUBERNETES else [False]):
                    argv = base + (["--weights", weights] if weights else []) + (["--gateway"] if gateway else [])
                    accepted.append((" ".join(argv), argv))
    for target, instance in CPU_PLANS:
        base = ["--target", target, "--engine", "k3", "--image", "registry.example/k3:test", "--instance", instance]
        base += region_args(target)
        for weights in weight_schemes(target)[:2]:
            argv = base + (["--weights", weights] if weights else [])
            accepted.append((" ".join(argv), argv))
    # Dry run 2: GPU instances other than the default (every GPU string follows --instance), namespaces,
    # replicas, and the k3 engine on GPU instances (a CPU plan: RAM requested, no GPU).
    k3 = ["--engine", "k3", "--image", "registry.example/k3:test"]
    extra = [["--target", "azure-aks", "--namespace", "team-a", "--gateway"],
             ["--target", "gcp-gke", "--instance", "a3-ultragpu-8g", "--weights", "gs://my-bucket/Kimi-K3"],
             ["--target", "gcp-gke", "--instance", "a4-highgpu-8g", "--gateway", "--namespace", "team-a"],
             ["--target", "azure-aks", "--instance", "Standard_ND96isr_H200_v5", "--replicas", "2"],
             ["--target", "aws-eks", "--replicas", "2", "--namespace", "team-a"],
             ["--target", "aws-hyperpod", "--namespace", "team-a", "--region", "us-east-1", "--weights", "s3://b/k"],
             ["--target", "alibaba-ack", "--namespace", "team-a", "--weights", "oss://kimi/Kimi-K3", "--region",
              "cn-hangzhou"] + SMALL_MODEL,
             ["--target", "gcp-vertex", "--instance", "a3-ultragpu-8g"] + SMALL_MODEL,
             ["--target", "k8s", "--namespace", "team-a", "--weights", "s3://my-bucket/kimi-k3"] + k3,
             ["--target", "gcp-gke", "--instance", "a3-ultragpu-8g"] + k3,
             ["--target", "aws-hyperpod"] + k3,
             # --autoscale / --monitoring (render_ops.h): KEDA and HPA, a Deployment and LWS groups, GMP on GKE
             # (with the frontend's IAM binding on a workload-pool cluster), PAI-EAS's autoscaler body.
             ["--target", "aws-eks", "--autoscale", "1:3", "--monitoring"],
             ["--target", "azure-aks", "--autoscale", "1:2", "--autoscaler", "hpa", "--monitoring", "--namespace",
              "team-a"],
             ["--target", "gcp-gke", "--autoscale", "1:2", "--monitoring", "--weights", "gs://my-bucket/Kimi-K3"],
             ["--target", "gcp-gke", "--autoscale", "1:2", "--autoscaler", "hpa"],
             ["--target", "k8s", "--autoscale", "1:2", "--monitoring"] + k3,
             ["--target", "alibaba-pai-eas", "--autoscale", "0:2", "--max-cold-start", "100000", "--weights",
              "oss://kimi/Kimi-K3", "--region", "cn-hangzhou"] + SMALL_MODEL,
             ["--target", "alibaba-pai-eas", "--autoscale", "1:3", "--weights", "oss://kimi/Kimi-K3", "--region",
              "cn-hangzhou"] + SMALL_MODEL]
    # Issue 41, multi-node where the guide goes: kimi-k3 as a PAI-EAS distributed unit and an ACK
    # LeaderWorkerSet (both engines), an ACK group of CPU nodes, Azure ML on Kubernetes compute.
    oss = ["--weights", "oss://kimi/Kimi-K3", "--region", "cn-hangzhou"]
    extra += [["--target", "alibaba-pai-eas"] + oss, ["--target", "alibaba-pai-eas"] + oss + k3,
              ["--target", "alibaba-pai-eas", "--replicas", "2"] + oss,
              ["--target", "alibaba-ack"] + oss, ["--target", "alibaba-ack", "--namespace", "team-a"] + oss + k3,
              ["--target", "alibaba-ack", "--instance", "ecs.re6.26xlarge"] + oss + k3,
              ["--target", "azure-ml", "--compute", "kubernetes"] + SMALL_MODEL,
              ["--target", "azure-ml", "--compute", "kubernetes", "--instance", "Standard_ND96isr_H200_v5"]
              + SMALL_MODEL]
    for argv in extra:
        accepted.append((" ".join(argv), argv))
    refused.append(("aws-eks --engine vllm on a CPU instance", ["--target", "aws-eks", "--instance", "x2iedn.32xlarge"]))
    refused.append(("alibaba-pai-eas on a CPU instance", ["--target", "alibaba-pai-eas", "--engine", "k3", "--image",
                                                          "r/k3:t", "--instance", "ecs.re6.52xlarge"]))
    # What a plan cannot run as rendered is refused with a message, not rendered.
    refused.append(("gcp-vertex kimi-k3 (2 instances)", ["--target", "gcp-vertex"]))
    refused.append(("azure-ml --compute kubernetes kimi-k3 (one container per instance)",
                    ["--target", "azure-ml", "--compute", "kubernetes"]))
    refused.append(("azure-aks --compute kubernetes", ["--target", "azure-aks", "--compute", "kubernetes"]))
    # Dry run 2: a bucket of another cloud, weights a target would ignore, placeholders, bad namespaces.
    refused.append(("aws-eks az:// (no Azure identity on EKS)", ["--target", "aws-eks", "--weights", "az://a/c/p"]))
    refused.append(("azure-aks s3:// (no AWS identity on AKS)", ["--target", "azure-aks", "--weights", "s3://b/p"]))
    refused.append(("azure-ml az:// (the endpoint pulls the hub id)", ["--target", "azure-ml", "--weights", "az://a/c/p"]))
    refused.append(("alibaba-pai-eas without oss:// weights", ["--target", "alibaba-pai-eas"]))
    refused.append(("aws-hyperpod s3:// without --region", ["--target", "aws-hyperpod", "--weights", "s3://b/p"]))
    refused.append(("azure-aks --namespace Bad_NS", ["--target", "azure-aks", "--namespace", "Bad_NS"]))
    refused.append(("aws-hyperpod --gateway", ["--target", "aws-hyperpod", "--gateway"]))
    refused.append(("k8s --autoscale 0:2 (no pod measures demand at zero)", ["--target", "k8s", "--autoscale", "0:2"]))
    refused.append(("alibaba-pai-eas --autoscale 0:2 without --max-cold-start",
                    ["--target", "alibaba-pai-eas", "--autoscale", "0:2", "--weights", "oss://k/K"] + SMALL_MODEL))
    refused.append(("alibaba-pai-eas --autoscale 0:2 above --max-cold-start",
                    ["--target", "alibaba-pai-eas", "--autoscale", "0:2", "--max-cold-start", "5", "--weights",
                     "oss://k/K"] + SMALL_MODEL))
    refused.append(("aws-hyperpod --monitoring", ["--target", "aws-hyperpod", "--monitoring"]))
    refused.append(("alibaba-ack --autoscale (KServe owns the HPA)",
                    ["--target", "alibaba-ack", "--autoscale", "1:2", "--weights", "oss://k/K", "--region",
                     "cn-hangzhou"] + SMALL_MODEL))
    return accepted, refused


def render(argv, out):
    r = subprocess.run([K3, "render", *argv, "--out", out], capture_output=True, text=True, timeout=60)
    return r


def yaml_docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def all_docs(d):
    docs = []
    for name in sorted(os.listdir(d)):
        if name.endswith((".yaml", ".yml")):
            docs += [(name, doc) for doc in yaml_docs(os.path.join(d, name))]
    return docs


# ---------------------------------------------------------------------------------------------- scripts
def check_scripts(label, d, counts):
    for name in sorted(os.listdir(d)):
        if not name.endswith(".sh"):
            continue
        path = os.path.join(d, name)
        r = subprocess.run(["bash", "-n", path], capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"{label}: bash -n {name}: {r.stderr.strip()}")
        counts["bash -n"] += 1
        if shutil.which("shellcheck"):
            r = subprocess.run(["shellcheck", "--format=gcc", path], capture_output=True, text=True)
            if r.returncode != 0:
                fail(f"{label}: shellcheck {name}:\n{r.stdout.strip()}")
            counts["shellcheck"] += 1


# ------------------------------------------------------------------------------------------- k3 dry run
def k3_command(container):
    """argv after `k3` for a container that runs k3 (exec form or a `k3 serve` shell line), else None."""
    cmd = container.get("command") or []
    args = container.get("args") or []
    if cmd[:1] == ["k3"]:
        return cmd[1:] + args
    for text in args if cmd[-1:] == ["-c"] else []:
        joined = text.replace("\\\n", " ")
        for line in re.split(r"[;\n]|&&", joined):
            words = shlex.split(line)
            if words[:2] == ["k3", "serve"]:
                return words[1:]
    return None


def containers_with_role(docs):
    """(role, container, group_size) for each container; role leader / worker / single."""
    out = []
    for _, doc in docs:
        kind = doc.get("kind")
        spec = doc.get("spec") or {}
        if kind == "LeaderWorkerSet":
            t = spec["leaderWorkerTemplate"]
            size = t.get("size", 1)
            for c in t["leaderTemplate"]["spec"]["containers"]:
                out.append(("leader", c, size))
            for c in t["workerTemplate"]["spec"]["containers"]:
                out.append(("worker", c, size))
        elif kind == "Deployment":
            for c in spec["template"]["spec"]["containers"]:
                out.append(("single", c, 1))
        elif kind == "InferenceService":
            for c in spec["predictor"].get("containers", []):
                out.append(("single", c, 1))
        elif kind == "InferenceEndpointConfig":
            out.append(("single", spec["worker"], 1))
    return out


def check_k3_command_lines(label, d, counts):
    docs = all_docs(d)
    lines = []
    for role, c, size in containers_with_role(docs):
        argv = k3_command(c)
        if argv is None:
            continue
        env = {e["name"]: str(e.get("value", "")) for e in c.get("env") or [] if "value" in e}
        if role != "single":
            env.update({"LWS_GROUP_SIZE": str(size), "LWS_WORKER_INDEX": "0" if role == "leader" else "1",
                        "LWS_LEADER_ADDRESS": "kimi-k3-0.kimi-k3.default"})
        lines.append((role, argv, env))
    # The pre-sync Job of --engine k3 (`k3 weights sync SOURCE DIR`): its own --dry-run parses both places.
    for _, doc in docs:
        if doc.get("kind") == "Job":
            for c in doc["spec"]["template"]["spec"]["containers"]:
                if (c.get("command") or [None])[0] == "k3":
                    lines.append(("job", list(c.get("args") or []), {}))
    if os.path.exists(os.path.join(d, "service.json")):
        with open(os.path.join(d, "service.json")) as f:
            service = json.load(f)
        for c in service["containers"]:
            words = shlex.split(c.get("script", ""))
            if words[:2] == ["k3", "serve"]:
                lines.append(("single", words[1:], {}))
            elif words[:2] == ["bash", "-c"]:
                lines += eas_unit_lines(label, service, c, counts)
    if "--engine k3" in label and not lines:
        fail(f"{label}: no k3 command line found in the rendered manifests")
    for role, argv, env in lines:
        full_env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), **env}
        r = subprocess.run([K3, *argv, "--dry-run"], capture_output=True, text=True, env=full_env, timeout=30)
        counts["k3 --dry-run"] += 1
        if r.returncode != 0 or "command line ok" not in r.stdout:
            fail(f"{label}: k3 {' '.join(argv)} ({role}) rejected: {r.stdout.strip()} {r.stderr.strip()}")
        elif role == "worker" and "headless" not in r.stdout:
            fail(f"{label}: worker command line would serve HTTP: {r.stdout.strip()}")


EAS_ENGINE_STUB = r'''#!/usr/bin/env python3
import json, os, sys
with open(os.environ["ENGINE_LOG"], "a") as f:
    f.write(json.dumps({"engine": os.path.basename(sys.argv[0]), "argv": sys.argv[1:],
                        "env": {k: os.environ.get(k) for k in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME")}}) + "\n")
'''


def eas_unit_lines(label, service, container, counts):
    """A PAI-EAS distributed unit: runs the container's `bash -c` script once per instance, with the
    variables EAS injects (RANK_ID, MASTER_ADDRESS, COMM_IFNAME) and `vllm` / `k3` stubs that record
    their argv. Every instance must start one engine process of one group: the same --nnodes (= unit.size)
    and leader, its own --node-rank, --headless on every instance but 0 (the one EAS sends traffic to).
    Returns the k3 command lines (with their role) for `k3 serve --dry-run`."""
    size = (service.get("unit") or {}).get("size", 1)
    out = []
    with tempfile.TemporaryDirectory(prefix="k3-eas-") as tmp:
        for engine in ("vllm", "k3"):
            with open(os.path.join(tmp, engine), "w") as f:
                f.write(EAS_ENGINE_STUB)
            os.chmod(os.path.join(tmp, engine), 0o755)
        log = os.path.join(tmp, "engine.jsonl")
        for rank in range(size):
            env = {"PATH": tmp + ":" + os.environ["PATH"], "ENGINE_LOG": log, "RANK_ID": str(rank),
                   "MASTER_ADDRESS": "10.0.0.10", "COMM_IFNAME": "eth1", "RANK_IP": f"10.0.0.{10 + rank}"}
            words = shlex.split(container["script"])
            r = subprocess.run(words, env=env, capture_output=True, text=True, timeout=30)
            if r.returncode != 0:
                fail(f"{label}: the unit script failed on RANK_ID {rank}: {r.stderr.strip()}")
        # Without the variables (a service that is not a unit) the script stops and names them.
        r = subprocess.run(shlex.split(container["script"]), env={"PATH": tmp + ":" + os.environ["PATH"],
                                                                  "ENGINE_LOG": log}, capture_output=True,
                           text=True, timeout=30)
        if r.returncode == 0 or "RANK_ID" not in r.stderr:
            fail(f"{label}: the unit script ran without RANK_ID: {r.stderr.strip()}")
        runs = [json.loads(l) for l in open(log)] if os.path.exists(log) else []
    counts["EAS unit instances"] = counts.get("EAS unit instances", 0) + len(runs)
    if len(runs) != size:
        return fail(f"{label}: {len(runs)} engine processes for a unit of {size}") or []
    gpus = (service.get("metadata") or {}).get("gpu", 0)
    for rank, run in enumerate(runs):
        argv = run["argv"]

        def flag(name):
            return argv[argv.index(name) + 1] if name in argv else None
        if flag("--nnodes") != str(size) or flag("--node-rank") != str(rank) or flag("--master-addr") != "10.0.0.10":
            fail(f"{label}: instance {rank} runs {run['engine']} {' '.join(argv)}")
        if ("--headless" in argv) != (rank > 0):
            fail(f"{label}: instance {rank} {'serves' if rank else 'does not serve'} HTTP: {' '.join(argv)}")
        if run["env"]["GLOO_SOCKET_IFNAME"] != "eth1":
            fail(f"{label}: instance {rank} does not use COMM_IFNAME for rank traffic: {run['env']}")
        if run["engine"] == "vllm":
            ranks = int(flag("--tensor-parallel-size") or 1) * int(flag("--pipeline-parallel-size") or 1)
            if ranks != gpus * size or run["env"]["NCCL_SOCKET_IFNAME"] != "eth1":
                fail(f"{label}: vLLM TP x PP = {ranks} on a unit of {size} x {gpus} GPUs ({run['env']})")
        else:
            out.append(("worker" if rank else "leader", argv, {}))
    return out


# ------------------------------------------------------------------------------------------ path chain
def served_model(container):
    """The model the engine loads: `vllm serve M`, `--model M`, or k3's --model."""
    cmd = (container.get("command") or []) + (container.get("args") or [])
    text = " ".join(cmd).replace("\\\n", " ")
    m = re.search(r"vllm serve (\S+)", text) or re.search(r"--model[ =](\S+)", text)
    return m.group(1) if m else None


def check_streamed_weights(label, weights, docs, job, engine):
    """Bucket weights on a Kubernetes target are streamed at every start, with no volume. vLLM reads them
    with RunAI Model Streamer (az: the container, with AZURE_STORAGE_ACCOUNT_NAME the account) and has no
    Job; k3 reads the URI itself and its Job fills that same URI from the hub with `k3 weights sync`."""
    scheme, rest = weights.split("://", 1)
    if engine == "vllm":
        expected = f"az://{rest.split('/', 1)[1]}" if scheme == "az" else weights
        if job is not None:
            fail(f"{label}: a pre-sync Job beside streamed weights")
    else:
        expected = weights
        if job is None:
            return fail(f"{label}: no Job fills {weights}")
        job_pod = job["spec"]["template"]["spec"]
        args = job_pod["containers"][0].get("args") or []
        if args[:2] != ["weights", "sync"] or args[3:4] != [weights] or not args[2].startswith("hf://"):
            fail(f"{label}: the Job runs k3 {' '.join(args)}, expected `weights sync hf://... {weights}`")
        if job_pod.get("volumes"):
            fail(f"{label}: the bucket-filling Job mounts {job_pod['volumes']}")
    for kind, pod in pod_specs(docs):
        if kind != "serving":
            continue
        c = pod["containers"][0]
        read = served_model(c)
        if read is None:
            continue  # a Ray worker
        text = " ".join((c.get("command") or []) + (c.get("args") or []))
        if read != expected:
            fail(f"{label}: the engine reads {read} ({text[:80]}...), expected {expected}")
        if engine == "vllm" and "--load-format runai_streamer" not in text:
            fail(f"{label}: vLLM reads {read} without --load-format runai_streamer")
        if any((v.get("persistentVolumeClaim") or {}) for v in pod.get("volumes") or []):
            fail(f"{label}: a weights volume beside streamed weights")
        env = {e["name"]: e.get("value") for e in c.get("env") or []}
        if engine == "vllm" and scheme == "az" and env.get("AZURE_STORAGE_ACCOUNT_NAME") != rest.split("/", 1)[0]:
            fail(f"{label}: AZURE_STORAGE_ACCOUNT_NAME is {env.get('AZURE_STORAGE_ACCOUNT_NAME')}")
        if scheme in ("az", "gs") and not pod.get("serviceAccountName"):
            fail(f"{label}: the engine reads {read} with no ServiceAccount (no workload identity)")
        if engine == "k3" and "--tensor-parallel-size" in text and "--enable-expert-parallel" not in text:
            fail(f"{label}: several k3 ranks stream {read} without --enable-expert-parallel "
                 "(each would read every expert)")


def job_destination(job):
    script = " ".join(job["spec"]["template"]["spec"]["containers"][0]["args"])
    script = " ".join(job["spec"]["template"]["spec"]["containers"][0].get("command") or []) + " " + script
    for pattern in [r"--local-dir (\S+)", r"aws s3 sync \S+ (\S+)", r"k3 weights sync \S+ (\S+)",
                    r"rsync --recursive \S+ (\S+)",
                    r"&& mv \S+ (\S+)$"]:
        m = re.search(pattern, script)
        if m:
            return m.group(1)
    return None


def mounts(container, pod_volumes):
    """mountPath -> volume source name (PVC claim) for a container."""
    claims = {v["name"]: (v.get("persistentVolumeClaim") or {}).get("claimName") for v in pod_volumes}
    return {m["mountPath"]: claims.get(m["name"]) for m in container.get("volumeMounts") or []}


def pod_specs(docs):
    for _, doc in docs:
        kind, spec = doc.get("kind"), doc.get("spec") or {}
        if kind == "Deployment":
            yield "serving", spec["template"]["spec"]
        elif kind == "LeaderWorkerSet":
            yield "serving", spec["leaderWorkerTemplate"]["leaderTemplate"]["spec"]
            yield "serving", spec["leaderWorkerTemplate"]["workerTemplate"]["spec"]
        elif kind == "Job":
            yield "job", spec["template"]["spec"]


def check_path_chain(label, target, argv, d, counts):
    docs = all_docs(d)
    counts["path chains"] += 1
    if target in KUBERNETES:
        job = next((doc for _, doc in docs if doc.get("kind") == "Job"), None)
        weights = argv[argv.index("--weights") + 1] if "--weights" in argv else ""
        engine = "k3" if "--engine k3" in " ".join(argv) else "vllm"
        if weights.split("://")[0] in ("s3", "gs", "az"):
            return check_streamed_weights(label, weights, docs, job, engine)
        if job is None:
            return fail(f"{label}: no pre-sync Job")
        written = job_destination(job)
        job_pod = job["spec"]["template"]["spec"]
        job_claims = mounts(job_pod["containers"][0], job_pod.get("volumes") or [])
        for kind, pod in pod_specs(docs):
            if kind != "serving":
                continue
            c = pod["containers"][0]
            read = served_model(c)
            if c.get("command", [""])[0] != "k3" and "vllm" not in json.dumps(c):
                continue
            if read is None:
                continue  # a Ray worker: it reads what the leader names
            if read != written:
                fail(f"{label}: the Job writes {written} but the engine reads {read}")
            # Same volume, mounted at the same place, above the model directory.
            serving_claims = mounts(c, pod.get("volumes") or [])
            under = [p for p in serving_claims if read.startswith(p.rstrip("/") + "/")]
            job_under = [p for p in job_claims if written.startswith(p.rstrip("/") + "/")]
            if not under or not job_under or serving_claims[under[0]] != job_claims[job_under[0]]:
                fail(f"{label}: {read} is not on the volume the Job fills ({serving_claims} vs {job_claims})")
    elif target == "aws-hyperpod":
        iec = next(doc for _, doc in docs if doc.get("kind") == "InferenceEndpointConfig")
        worker = iec["spec"]["worker"]
        read = served_model(worker)
        mount = worker["modelVolumeMount"]["mountPath"]
        if read != mount:
            fail(f"{label}: the operator mounts {mount} but the engine reads {read}")
    elif target == "alibaba-ack" and any(doc.get("kind") == "LeaderWorkerSet" for _, doc in docs):
        # A group: every pod mounts the OSS claim of weights.yaml where its engine reads.
        pvc = next(doc for _, doc in docs if doc.get("kind") == "PersistentVolumeClaim")["metadata"]["name"]
        for _, pod in pod_specs(docs):
            c = pod["containers"][0]
            claims = mounts(c, pod.get("volumes") or [])
            read = served_model(c)
            if read is not None and claims.get(read) != pvc:
                fail(f"{label}: the engine reads {read} but the OSS claim {pvc} is mounted at {claims}")
            if pvc not in claims.values():
                fail(f"{label}: a pod of the group does not mount {pvc}: {claims}")
    elif target == "alibaba-ack":
        isvc = next(doc for _, doc in docs if doc.get("kind") == "InferenceService")
        c = isvc["spec"]["predictor"]["containers"][0]
        text = " ".join(c.get("args") or [])
        m = re.search(r"(?:vllm serve|--model) (\S+)", text)
        mount_paths = [x["mountPath"] for x in c.get("volumeMounts") or []]
        if not m or m.group(1) not in mount_paths:
            fail(f"{label}: the engine reads {m and m.group(1)} but the OSS volume is at {mount_paths}")
    elif target == "alibaba-pai-eas":
        with open(os.path.join(d, "service.json")) as f:
            service = json.load(f)
        script = service["containers"][0]["script"]
        m = re.search(r"(?:vllm serve|--model) (\S+)", script)
        mount_paths = [s["mount_path"].rstrip("/") for s in service.get("storage", [])]
        if not m or m.group(1) not in mount_paths:
            fail(f"{label}: the engine reads {m and m.group(1)} but the storage is mounted at {mount_paths}")
    # azure-ml and gcp-vertex have no weights volume: the engine pulls the hub id at start (their NOTES say so).


# --------------------------------------------------------------------------------------- stub and real CLIs
STUB = r'''#!/usr/bin/env python3
# Records one cloud-CLI invocation (argv, cwd, stdin when `-f -`) and answers like a quiet success.
import json, os, re, sys
name = os.path.basename(sys.argv[0])
argv = sys.argv[1:]
stdin = ""
if "-" in argv and not sys.stdin.isatty():
    stdin = sys.stdin.read()
with open(os.environ["STUB_LOG"], "a") as f:
    f.write(json.dumps({"cli": name, "argv": argv, "cwd": os.getcwd(), "stdin": stdin}) + "\n")
if name == "kubectl" and "--dry-run=client" in argv and os.environ.get("REAL_KUBECTL"):
    # A client-side dry run needs no cluster: the real kubectl prints the object a pipe applies next.
    os.execv(os.environ["REAL_KUBECTL"], ["kubectl", *argv])
fail = os.environ.get("STUB_FAIL", "")
if fail and re.search(fail, name + " " + " ".join(argv)):
    print("ERROR: simulated failure of " + name, file=sys.stderr)
    sys.exit(1)
if name == "az" and "--query" in argv and argv[argv.index("--query") + 1:][:1] == ["id"]:
    # An Azure resource id, which az validates at parse time where a later command takes it.
    print("/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-k3/providers/"
          "Microsoft.ManagedIdentity/userAssignedIdentities/stub-1")
    sys.exit(0)
if "describe" in argv and "projects" not in argv:  # `X describe || X create`: the create branch runs too
    sys.exit(1)
if name == "az" and argv[:3] == ["aks", "nodepool", "show"]:  # `show || add`: the add branch runs too
    sys.exit(1)
print("stub-1")
'''

# Script variables (${VAR:?...}) and the values the stubs run with.
VALUES = {"PROJECT_ID": "k3-test-project", "REGION": "us-central1", "ZONE": "us-central1-a", "LOCATION": "eastus",
          "RESERVATION": "k3-res/reservationBlocks/b1/reservationSubBlocks/s1", "WORKLOAD_POLICY": "k3-policy",
          "CLUSTER": "k3-cluster", "CLUSTER_NAME": "k3-cluster", "RESOURCE_GROUP": "rg-k3",
          "OFFERING_ID": "cb-0123456789abcdef0", "EFS_FILE_SYSTEM_ID": "fs-0123456789abcdef0",
          "NODE_ROLE_ARN": "arn:aws:iam::123456789012:role/k3-nodes",
          "SUBNETS": "subnet-0123456789abcdef0 subnet-0fedcba9876543210",
          "EAS_RESOURCE_ID": "eas-r-1", "EAS_VPC_ID": "vpc-1", "EAS_VSWITCH_ID": "vsw-1",
          "EAS_SECURITY_GROUP_ID": "sg-1", "EAS_GPU_DRIVER_VERSION": "550.127.08",
          "OSS_ACCESS_KEY_ID": "LTAIxxxx", "OSS_ACCESS_KEY_SECRET": "secret-for-test",
          "CAPACITY_RESERVATION_GROUP_ID": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/"
                                           "rg-crg/providers/Microsoft.Compute/capacityReservationGroups/crg-k3",
          "REPOSITORY": "k3", "WORKSPACE": "k3-workspace",
          "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret-for-test"}


def script_env(stub_dir, log, extra=None):
    env = {"PATH": stub_dir + ":" + os.environ["PATH"], "HOME": os.path.dirname(log), "STUB_LOG": log,
           "LANG": "C.UTF-8", "KUBECONFIG": os.path.join(os.path.dirname(log), "no-kubeconfig")}
    if real_cli("kubectl"):
        env["REAL_KUBECTL"] = real_cli("kubectl")
    env.update(VALUES)
    env.update(extra or {})
    return env


def apply_block(d):
    """The shell lines of NOTES.md's Apply section, without the lines that run rendered scripts."""
    path = os.path.join(d, "NOTES.md")
    if not os.path.exists(path):
        return ""
    text = open(path).read()
    m = re.search(r"## Apply\s*```sh\n(.*?)```", text, re.S)
    if not m:
        return ""
    return "\n".join(l for l in m.group(1).splitlines() if not re.match(r"\s*bash \S+\.sh", l))


def run_under_stubs(label, d, stub_dir, work):
    """Runs the rendered scripts and apply steps against the stubs; returns the recorded invocations."""
    log = os.path.join(work, "invocations.jsonl")
    open(log, "w").close()
    scripts = [n for n in sorted(os.listdir(d)) if n.endswith(".sh")]
    apply = apply_block(d)
    if apply:
        with open(os.path.join(d, "apply-steps.sh"), "w") as f:
            f.write("set -euo pipefail\n" + apply + "\n")
        scripts.append("apply-steps.sh")
    for name in scripts:
        r = subprocess.run(["bash", name], cwd=d, capture_output=True, text=True, env=script_env(stub_dir, log),
                           timeout=60, stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            fail(f"{label}: {name} failed against succeeding stub CLIs (rc {r.returncode}):\n"
                 f"{r.stdout[-1500:]}{r.stderr[-1500:]}")
    with open(log) as f:
        return [json.loads(l) for l in f if l.strip()]


# Usage errors (the CLI refused the command line) and the outcomes that mean it parsed.
USAGE = {
    "aws": r"usage: aws|aws: error|Invalid choice|Unknown options|the following arguments are required",
    "az": r"unrecognized arguments|the following arguments are required|is misspelled or not recognized|"
          r"argument .*: invalid|usage: az|is not in the '.*' command group",
    "gcloud": r"unrecognized arguments|argument .*: (?:Must|Invalid|Bad|expected)|Invalid choice|"
              r"is not a valid|must be specified|required",
    "kubectl": r"unknown flag|unknown command|unknown shorthand|See 'kubectl .* --help'|required flag|"
               r"the path .* does not exist|error: must specify",
}
PARSED = {
    "aws": r"Unable to locate credentials|Could not connect to the endpoint|EndpointConnectionError|"
           r"Failed to resolve|NoCredentials",
    "az": r"az login|Please run 'az login'|No subscription found|Failed to establish a new connection|"
          r"Max retries exceeded",
    "gcloud": r"active account selected|gcloud auth login|You do not currently have|Failed to resolve|"
              r"Unable to find|Name or service not known|Could not fetch resource|Network is unreachable|"
              r"HTTPSConnectionPool",
    "kubectl": r"connection refused|failed to download openapi|Unable to connect|no such host|dial tcp|"
               r"unable to read URL|network is unreachable|Unable to read URL",
}
# Commands newer than the CLI Debian 12 ships (its version predates them): removed from the command line
# (a flag) or not checked (an operation), and reported as such.
NEWER_THAN_INSTALLED = {
    ("aws", "describe-capacity-block-offerings"): "EC2 Capacity Blocks need awscli >= 2.13.38",
    ("aws", "purchase-capacity-block"): "EC2 Capacity Blocks need awscli >= 2.13.38",
    ("gcloud", "--accelerator-network-profile"): "A4X Max node pools' flag is newer than gcloud 528",
    ("az", "ml"): "Azure ML v2 is the `ml` extension (az extension add --name ml), not in Debian's azure-cli",
    ("az", "k8s-extension"): "the k8s-extension extension (az extension add --name k8s-extension) is not in "
                             "Debian's azure-cli",
    ("az", "--crg-id"): "AKS capacity reservation groups need az >= 2.56 (Debian ships 2.45)",
    ("az", "--enable-workload-identity"): "AKS workload identity went GA after az 2.45",
}

VALUE_FLAGS = {"--crg-id"}  # flags above that take a separate value, removed with it


def real_cli(cli):
    for path in ["/usr/bin/" + cli, shutil.which(cli)]:
        if path and os.path.exists(path) and "pyenv" not in os.path.realpath(path) and "/shims/" not in path:
            return path
    return shutil.which(cli)


def cli_env(home):
    env = {"PATH": os.environ["PATH"], "HOME": home, "LANG": "C.UTF-8", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": home + "/aws-config",
           "AWS_SHARED_CREDENTIALS_FILE": home + "/aws-credentials", "AWS_PAGER": "",
           "CLOUDSDK_CONFIG": home + "/gcloud", "CLOUDSDK_CORE_DISABLE_PROMPTS": "1",
           "AZURE_CONFIG_DIR": home + "/azure", "AZURE_CORE_COLLECT_TELEMETRY": "false",
           "KUBECONFIG": home + "/kubeconfig"}
    return env


def classify(cli, argv, cwd, stdin, home):
    exe = real_cli(cli)
    r = subprocess.run(["unshare", "--net", exe, *argv], cwd=cwd, input=stdin, capture_output=True, text=True,
                       env=cli_env(home), timeout=120)
    out = r.stdout + r.stderr
    if r.returncode == 0:
        return "ran", out
    if re.search(USAGE[cli], out) and not re.search(PARSED[cli], out):
        return "usage", out
    if re.search(PARSED[cli], out):
        return "credentials/network", out
    return "unknown", out


def check_one_invocation(cli, argv, cwd, stdin, homes):
    """(cli, argv checked, outcome kind, output) for one distinct invocation; takes a private HOME."""
    newer = [(tok, why) for (c, tok), why in NEWER_THAN_INSTALLED.items()
             if c == cli and any(a == tok or a.startswith(tok + "=") for a in argv)]
    home = homes.get()
    try:
        kind, out = classify(cli, argv, cwd, stdin, home)
        if kind == "usage" and newer:
            for tok, why in newer:
                if tok.startswith("--"):
                    if tok in VALUE_FLAGS and tok in argv and argv.index(tok) + 1 < len(argv):
                        del argv[argv.index(tok) + 1]  # the flag's value
                    argv = [a for a in argv if not (a == tok or a.startswith(tok + "="))]
                    kind, out = classify(cli, argv, cwd, stdin, home)
                    kind = kind if kind == "usage" else f"{kind} (without {tok}: {why})"
                else:
                    kind = f"not checked: {why}"
    finally:
        homes.put(home)
    return cli, argv, kind, out


def check_invocations(invocations, home, results):
    """Runs each distinct invocation with the real CLI; fills results[cli] with outcome counts. The CLIs
    (Python programs that take a second or more to start) run nproc at a time, each with its own HOME."""
    seen = set()
    jobs = []
    for inv in invocations:
        cli = inv["cli"]
        if cli not in CLOUD_CLIS:
            results.setdefault("not checked (no offline CLI)", {}).setdefault(cli, 0)
            results["not checked (no offline CLI)"][cli] += 1
            continue
        argv = list(inv["argv"])
        key = (cli, tuple(argv), inv["stdin"])
        if key in seen:
            continue
        seen.add(key)
        outcome = results.setdefault(cli, {})
        if real_cli(cli) is None:
            outcome["skipped: CLI not installed"] = outcome.get("skipped: CLI not installed", 0) + 1
            continue
        jobs.append((cli, argv, inv["cwd"], inv["stdin"]))
    workers = max(1, os.cpu_count() or 1)
    homes = queue.Queue()
    for i in range(workers):
        os.makedirs(f"{home}/w{i}", exist_ok=True)
        homes.put(f"{home}/w{i}")
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        for cli, argv, kind, out in pool.map(lambda job: check_one_invocation(*job, homes), jobs):
            outcome = results.setdefault(cli, {})
            outcome[kind] = outcome.get(kind, 0) + 1
            if kind == "usage" or kind == "unknown":
                fail(f"{cli} {shlex.join(argv)}\n  -> {kind}: {out.strip()[:800]}")


# ------------------------------------------------------------------------------------------ core schemas
def check_core_schemas(work, counts):
    """Every rendered core object (and LWS / KServe pod template) against the upstream Kubernetes schemas."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "core_schemas")
    if not shutil.which("node") or not os.path.isdir(os.path.join(here, "node_modules")):
        print("core schemas: skipped (needs node and `npm ci --prefix tests/deploy/core_schemas`)")
        return
    files = sorted(os.path.join(root, f) for root, _, names in os.walk(work) for f in names
                   if f.endswith((".yaml", ".yml")) and "/refused" not in root and "/schemas" not in root)
    r = subprocess.run(["node", os.path.join(here, "validate.mjs"), *files], capture_output=True, text=True,
                       timeout=300)
    print(r.stdout.strip()[-4000:])
    counts["core schema runs"] = 1
    if r.returncode != 0:
        fail(f"core schemas: {r.stdout.strip()[-2000:]} {r.stderr.strip()[-1000:]}")


# --------------------------------------------------------------------------------------- cleanup failure
def check_cleanup_continues(label, d, stub_dir, work, fail_pattern, later):
    """cleanup.sh with `fail_pattern` failing: every command in `later` still runs, exit != 0, summary."""
    log = os.path.join(work, "cleanup.jsonl")
    open(log, "w").close()
    r = subprocess.run(["bash", os.path.join(d, "cleanup.sh")], cwd="/", capture_output=True, text=True,
                       env=script_env(stub_dir, log, {"STUB_FAIL": fail_pattern}), timeout=60)
    with open(log) as f:
        ran = [json.loads(l)["cli"] + " " + " ".join(json.loads(l)["argv"]) for l in f if l.strip()]
    if not any(re.search(fail_pattern, c) for c in ran):
        fail(f"{label}: cleanup never ran the command meant to fail ({fail_pattern})")
    for pattern in later:
        if not any(re.search(pattern, c) for c in ran):
            fail(f"{label}: cleanup stopped before '{pattern}' after '{fail_pattern}' failed:\n" + "\n".join(ran))
    if r.returncode == 0:
        fail(f"{label}: cleanup exited 0 although '{fail_pattern}' failed")
    if "FAILED" not in r.stdout or "Summary" not in r.stdout:
        fail(f"{label}: cleanup's summary does not name the failure:\n{r.stdout[-1500:]}")
    return len(ran)


SCHEMA_DIR = None  # ../shared/schemas (or K3_SCHEMA_DIR) plus tests/deploy/crds, copied together by main()


def combined_schema_dir(work):
    """One --schema-dir with the shared CRDs and the add-ons' CRDs (KEDA, Prometheus Operator, GMP)."""
    here = os.path.dirname(os.path.abspath(__file__))
    shared = os.environ.get("K3_SCHEMA_DIR") or os.path.join(here, "..", "..", "..", "shared", "schemas")
    out = os.path.join(work, "schemas")
    os.makedirs(out)
    for src in [shared, os.path.join(here, "crds")]:
        if not os.path.isdir(src):
            print(f"k3 lint: no CRDs at {src}")
            continue
        for name in os.listdir(src):
            if name.endswith((".yaml", ".yml")):
                shutil.copy(os.path.join(src, name), os.path.join(out, name))
    return out


def check_lint(label, d, counts):
    """`k3 lint DIR --schema-dir` (strict CRDs) passes every rendered folder: no error finding. Warnings
    (an image whose arm64 variant is unknown) are allowed."""
    argv = [K3, "lint", d, "--format", "json"] + (["--schema-dir", SCHEMA_DIR] if SCHEMA_DIR else [])
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    counts["k3 lint"] = counts.get("k3 lint", 0) + 1
    try:
        findings = json.loads(r.stdout or "[]")
    except json.JSONDecodeError:
        return fail(f"{label}: k3 lint printed no JSON: {r.stdout[:300]} {r.stderr[:300]}")
    errors = [f for f in findings if f.get("severity") == "error"]
    if errors or r.returncode not in (0, 1):
        fail(f"{label}: k3 lint reports errors on the render: {errors[:3]}")


def check_instance_strings(label, argv, d):
    """--instance decides every GPU string: a render for an amd64 H200 / B200 instance names no GB300,
    A4X flag or pool anywhere; a --namespace render puts every object in it and says -n on kubectl lines."""
    texts = {n: open(os.path.join(d, n)).read() for n in os.listdir(d) if os.path.isfile(os.path.join(d, n))}
    if "--instance" in argv and argv[argv.index("--instance") + 1] in (
            "a3-ultragpu-8g", "a4-highgpu-8g", "Standard_ND96isr_H200_v5"):
        for name, text in texts.items():
            for word in ("gb300", "a4x", "GB300", "--placement-policy", "WORKLOAD_POLICY"):
                if word in text:
                    fail(f"{label}: {name} says {word} on a {argv[argv.index('--instance') + 1]} render")
    if "--namespace" in argv:
        ns = argv[argv.index("--namespace") + 1]
        for name, doc in all_docs(d):
            if doc.get("kind") in (None, "Namespace", "PersistentVolume", "StorageClass"):
                continue  # not a Kubernetes object (Azure ML YAML), or cluster-scoped
            if (doc.get("metadata") or {}).get("namespace") != ns:
                fail(f"{label}: {name} {doc.get('kind')} {doc.get('metadata', {}).get('name')} is not in {ns}")
        for line in texts.get("NOTES.md", "").splitlines():
            if re.search(r"kubectl (get|wait) ", line) and f"-n {ns}" not in line:
                fail(f"{label}: NOTES.md line without -n {ns}: {line}")


def check_identity(label, d):
    """Bucket weights read through a workload identity: the ServiceAccount setup-cluster.sh federates
    (AKS subject / GKE principal) is the one every pod that touches the bucket runs as."""
    setup = os.path.join(d, "setup-cluster.sh")
    if not os.path.exists(setup):
        return
    text = open(setup).read()
    m = re.search(r"system:serviceaccount:([a-z0-9-]+):([a-z0-9-]+)", text) or \
        re.search(r"subject/ns/([a-z0-9-]+)/sa/([a-z0-9-]+)", text)
    if not m:
        return
    # The endpoint picker (gateway.yaml) and GMP's query frontend (monitoring.yaml) never read the bucket.
    for kind, pod in pod_specs([(n, doc) for n, doc in all_docs(d) if n not in ("gateway.yaml", "monitoring.yaml")]):
        if pod.get("serviceAccountName") != m.group(2):
            fail(f"{label}: setup federates {m.group(1)}/{m.group(2)} but a {kind} pod runs as "
                 f"{pod.get('serviceAccountName')}")


def check_used_folder(label, argv, d):
    """Rendering another combination into the folder is refused (its files would linger); --force
    deletes what the new render does not write."""
    other = ["--target", "k8s", "--weights", "hf://moonshotai/Kimi-K3"]
    r = render(other, d)
    if r.returncode == 0:
        fail(f"{label}: rendering k8s into its used folder was accepted")
    r = subprocess.run([K3, "render", *other, "--out", d, "--force"], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail(f"{label}: render --force into a used folder failed: {r.stderr.strip()}")
    expected = set(subprocess.run([K3, "render", *other, "--out", "-"], capture_output=True, text=True,
                                  timeout=60).stdout.split("# file: ")[1:])
    names = {e.split("\n", 1)[0] for e in expected}
    if set(os.listdir(d)) != names:
        fail(f"{label}: after --force the folder holds {sorted(os.listdir(d))}, expected {sorted(names)}")


def check_combination(d, label, argv, stub_dir):
    """Renders one accepted combination into `d` and runs every check on it; returns (counts, invocations)."""
    counts = {"combinations": 1}
    r = render(argv, d)
    if r.returncode != 0:
        fail(f"k3 render {label}: exit {r.returncode}: {r.stderr.strip()}")
        return counts, []
    for k in ["bash -n", "shellcheck", "k3 --dry-run", "path chains", "cleanup failure runs"]:
        counts[k] = 0
    target = argv[1]
    check_scripts(label, d, counts)
    check_k3_command_lines(label, d, counts)
    check_path_chain(label, target, argv, d, counts)
    check_identity(label, d)
    check_instance_strings(label, argv, d)
    check_lint(label, d, counts)
    scratch = d + "-logs"
    os.makedirs(scratch)
    invocations = run_under_stubs(label, d, stub_dir, scratch)
    if target in ("azure-aks", "gcp-gke", "aws-eks", "k8s") and "--gateway" not in argv and \
            "--weights" not in argv and "--engine k3" not in label:
        later = {"azure-aks": [r"az aks delete", r"capacity reservation group delete", r"az group delete"],
                 "gcp-gke": [r"clusters delete", r"reservations delete"],
                 "aws-eks": [r"kubectl delete -f weights.yaml"],
                 "k8s": [r"kubectl delete -f weights.yaml"]}[target]
        first = {"azure-aks": r"nodepool delete", "gcp-gke": r"node-pools delete",
                 "aws-eks": r"kubectl delete -f kimi-k3", "k8s": r"kubectl delete -f kimi-k3"}[target]
        if os.path.exists(os.path.join(d, "cleanup.sh")):
            check_cleanup_continues(label, d, stub_dir, scratch, first, later)
            counts["cleanup failure runs"] += 1
    if "--gateway" in argv:
        used = d + "-used"
        if render(argv, used).returncode == 0:
            check_used_folder(label, argv, used)
            counts["used-folder runs"] = counts.get("used-folder runs", 0) + 1
    return counts, invocations


def main():
    global K3, SCHEMA_DIR
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    K3 = os.path.abspath(sys.argv[1])
    started = time.monotonic()
    counts = {"combinations": 0, "refusals": 0, "bash -n": 0, "shellcheck": 0, "k3 --dry-run": 0,
              "path chains": 0, "cleanup failure runs": 0}
    results = {}
    invocations = []
    accepted, refused = combinations()
    with tempfile.TemporaryDirectory(prefix="k3-rendered-") as work:
        stub_dir = os.path.join(work, "stubs")
        os.makedirs(stub_dir)
        for cli in CLOUD_CLIS + OTHER_TOOLS:
            with open(os.path.join(stub_dir, cli), "w") as f:
                f.write(STUB)
            os.chmod(os.path.join(stub_dir, cli), 0o755)
        home = os.path.join(work, "home")
        os.makedirs(home)
        SCHEMA_DIR = combined_schema_dir(work)
        # Each combination renders into its own folder and logs its stub runs there: nproc at a time.
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
            jobs = [pool.submit(check_combination, os.path.join(work, f"r{i}"), label, argv, stub_dir)
                    for i, (label, argv) in enumerate(accepted)]
            for job in jobs:
                local_counts, local_invocations = job.result()
                for k, v in local_counts.items():
                    counts[k] = counts.get(k, 0) + v
                invocations += local_invocations
        for label, argv in refused:
            r = render(argv, os.path.join(work, "refused"))
            counts["refusals"] += 1
            if r.returncode == 0 or "--" not in r.stderr:  # the message names the flag to change
                fail(f"k3 render {label}: expected a refusal naming the fix, got exit {r.returncode}: {r.stderr}")
        check_core_schemas(work, counts)
        if not shutil.which("unshare"):
            print("cloud CLI argument checks: skipped (no `unshare` to run them without network)")
        else:
            probe = subprocess.run(["unshare", "--net", "true"], capture_output=True, text=True)
            if probe.returncode != 0:
                print(f"cloud CLI argument checks: skipped (unshare --net: {probe.stderr.strip()})")
            else:
                rendered_at = time.monotonic()
                check_invocations(invocations, home, results)
                print(f"rendering and stub runs {rendered_at - started:.0f} s, real CLI checks "
                      f"{time.monotonic() - rendered_at:.0f} s")
    print(f"rendered: {counts['combinations']} combinations, {counts['refusals']} refusals checked")
    if not shutil.which("shellcheck"):
        print("shellcheck: skipped (not installed; scripts/install-deps.sh installs it)")
    for k in ["bash -n", "shellcheck", "k3 --dry-run", "EAS unit instances", "path chains", "k3 lint",
              "cleanup failure runs", "used-folder runs"]:
        print(f"  {k}: {counts.get(k, 0)}")
    print(f"cloud CLI invocations recorded: {len(invocations)}; distinct ones checked by the real CLI, per CLI:")
    for cli in CLOUD_CLIS + ["not checked (no offline CLI)"]:
        outcomes = results.get(cli, {})
        if cli in CLOUD_CLIS and real_cli(cli) is None:
            print(f"  {cli}: skipped (not installed)")
            continue
        total = sum(outcomes.values())
        detail = ", ".join(f"{v} {k}" for k, v in sorted(outcomes.items()))
        print(f"  {cli}: {total} ({detail})")
    print(f"{len(FAILURES)} failures, {time.monotonic() - started:.0f} s")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
