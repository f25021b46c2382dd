#!/usr/bin/env bash
# Stands in for the k3 binary in the compat suite run by netns_test.sh: `netns_group.sh serve ARGS...`
# starts the same `k3 serve ARGS` as a LeaderWorkerSet-style group of two ranks, the leader here (in the
# leader's namespace, serving HTTP) and the worker in $K3_WORKER_NETNS (--headless), wired only by the LWS
# environment. It forwards SIGTERM / SIGINT to the leader and exits with the leader's status; the worker
# ends with the group. Other commands run the real binary unchanged.
#   env: K3_REAL_BIN, K3_WORKER_NETNS, K3_LEADER_ADDRESS
set -uo pipefail
if [[ ${1:-} != serve ]]; then exec "$K3_REAL_BIN" "$@"; fi
# A rendezvous port per group: the suite may run two groups at once (prefix test: warm and cold). Below
# the kernel's ephemeral range (32768-60999), where the suite's own client connections take their ports
# (a CI run once drew a port a client held, and the leader refused it as in use).
port=$((21000 + RANDOM % 8000))
lws=(LWS_GROUP_SIZE=2 LWS_LEADER_ADDRESS="$K3_LEADER_ADDRESS")
# The two "nodes" share this machine's cores, which each would take all of by default (one rank per node):
# one model thread each, or four spinning threads on a 2-core CI machine make every step 4-10x slower.
threads=(--threads "${K3_GROUP_THREADS:-1}")
ip netns exec "$K3_WORKER_NETNS" env "${lws[@]}" LWS_WORKER_INDEX=1 \
  "$K3_REAL_BIN" "$@" "${threads[@]}" --tensor-parallel-size 2 --master-port "$port" --headless &
worker=$!
env "${lws[@]}" LWS_WORKER_INDEX=0 "$K3_REAL_BIN" "$@" "${threads[@]}" --tensor-parallel-size 2 --master-port "$port" &
leader=$!
trap 'kill -TERM "$leader" 2>/dev/null' TERM INT
while true; do
  wait "$leader"
  rc=$?
  # wait returns early (>128) when a trapped signal arrives; wait again until the leader has exited.
  if ! kill -0 "$leader" 2>/dev/null; then break; fi
done
# The worker sees the group end and exits; bounded, then forced.
for _ in $(seq 1 100); do
  kill -0 "$worker" 2>/dev/null || break
  sleep 0.1
done
kill -9 "$worker" 2>/dev/null
exit "$rc"
