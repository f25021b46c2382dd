#!/usr/bin/env bash
# Two "nodes" of one serving group: network namespaces k3a-PID and k3b-PID joined by a veth pair
# (10.213.PID%250.1 and .2, addresses of namespaces this test creates and deletes), one rank per namespace,
# started only with LeaderWorkerSet's environment (LWS_GROUP_SIZE, LWS_WORKER_INDEX, LWS_LEADER_ADDRESS)
# and --tensor-parallel-size 2: no --nnodes / --node-rank / --master-addr. The openai SDK compat suite
# (tests/compat/*.test.cjs, less vllm_parity, responses, http_layer and embeddings: request fields,
# routes, flags, the HTTP layer and the embeddings API, which the one-process run covers and a group does
# not change; dist_test.py's TP 2 run checks one embedding) then runs inside the leader's namespace against
# that group: every server the suite starts is a two-namespace group (netns_group.sh).
#
#   netns_test.sh K3_BINARY      exit 77 (ctest SKIP) with the reason when namespaces cannot be made
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
k3=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
compat=$here/../compat

skip() {
  echo "SKIP: $*"
  exit 77
}
[[ $(id -u) == 0 ]] || skip "needs root to create network namespaces"
command -v ip >/dev/null || skip "ip (iproute2) is not installed"
command -v node >/dev/null || skip "node is not installed (the compat suite needs it)"
if [[ ! -f $compat/node_modules/openai/package.json ]]; then
  (cd "$compat" && npm ci --no-audit --no-fund --loglevel=error) || skip "npm ci in tests/compat failed"
fi

id=$$
net=$((id % 250))
ns_a=k3a-$id
ns_b=k3b-$id
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  ip netns pids "$ns_b" 2>/dev/null | xargs -r kill -9 2>/dev/null
  ip netns pids "$ns_a" 2>/dev/null | xargs -r kill -9 2>/dev/null
  ip netns del "$ns_a" 2>/dev/null
  ip netns del "$ns_b" 2>/dev/null
}
trap cleanup EXIT
ip netns add "$ns_a" || skip "ip netns add failed (no permission for namespaces here)"
ip netns add "$ns_b" || skip "ip netns add failed"
ip link add "va$id" type veth peer name "vb$id" || skip "cannot create a veth pair"
ip link set "va$id" netns "$ns_a"
ip link set "vb$id" netns "$ns_b"
ip -n "$ns_a" addr add "10.213.$net.1/24" dev "va$id"
ip -n "$ns_b" addr add "10.213.$net.2/24" dev "vb$id"
for ns in "$ns_a" "$ns_b"; do ip -n "$ns" link set lo up; done
ip -n "$ns_a" link set "va$id" up
ip -n "$ns_b" link set "vb$id" up

echo "namespaces $ns_a (10.213.$net.1, leader) and $ns_b (10.213.$net.2, worker)"
suite=()
for file in "$compat"/*.test.cjs; do
  case $file in
    */vllm_parity.test.cjs | */responses.test.cjs | */http_layer.test.cjs | */embeddings.test.cjs) ;;
    *) suite+=("$file") ;;
  esac
done
start=$SECONDS
ip netns exec "$ns_a" env K3_BIN="$here/netns_group.sh" K3_REAL_BIN="$k3" K3_WORKER_NETNS="$ns_b" \
  K3_LEADER_ADDRESS="10.213.$net.1" \
  timeout 1500 node --test --test-reporter=spec --test-concurrency=1 "${suite[@]}"
rc=$?
echo "compat suite against the two-namespace group: exit $rc, $((SECONDS - start)) s"
exit $rc
