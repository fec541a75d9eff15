#!/bin/sh
# Runs an MPI program on two "hosts" of this machine: two network
# namespaces joined by a veth pair (10.213.0.1 and 10.213.0.2), each with
# its own host name, one rank on each. mpiexec runs in the first, and
# starts the second one's proxy through this script (hydra's ssh launcher,
# with `ip netns exec` for ssh), so the ranks meet over TCP through the
# veth pair as they would over a network, not through shared memory.
#
#   two_hosts.sh PROGRAM [ARGS...]   run it; then print the bytes that
#                                    crossed the veth pair
#   two_hosts.sh --probe             exit 0 where namespaces can be made
#
# Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN), iproute2 and MPICH's hydra.
set -eu

if [ -n "${MP_TWO_HOSTS_NS:-}" ]; then
  # As hydra's launcher (mpiexec's environment has MP_TWO_HOSTS_NS): it
  # calls `LAUNCHER -x HOST COMMAND`, as it would call ssh.
  while [ $# -gt 0 ]; do
    case "$1" in -*) shift ;; *) break ;; esac
  done
  host=$1
  shift
  case "$host" in
  10.213.0.1) ns=$MP_TWO_HOSTS_NS.a ;;
  10.213.0.2) ns=$MP_TWO_HOSTS_NS.b ;;
  *)
    echo "two_hosts.sh: unknown host '$host'" >&2
    exit 1
    ;;
  esac
  exec ip netns exec "$ns" unshare --uts sh -c "hostname ${ns##*.}-host; $*"
fi

ns=mp$$
cleanup() {
  ip netns delete "$ns.a" 2>/dev/null || true
  ip netns delete "$ns.b" 2>/dev/null || true
  [ -z "${work:-}" ] || rm -rf "$work"
}
trap cleanup EXIT INT TERM

make_hosts() {
  ip netns add "$ns.a" && ip netns add "$ns.b" &&
    ip link add "$ns.a" type veth peer name "$ns.b" &&
    ip link set "$ns.a" netns "$ns.a" && ip link set "$ns.b" netns "$ns.b" &&
    ip -n "$ns.a" addr add 10.213.0.1/24 dev "$ns.a" &&
    ip -n "$ns.b" addr add 10.213.0.2/24 dev "$ns.b" &&
    for side in a b; do
      ip -n "$ns.$side" link set lo up && ip -n "$ns.$side" link set "$ns.$side" up ||
        return 1
    done
}

if [ "${1:-}" = "--probe" ]; then
  for tool in ip unshare mpiexec.hydra; do
    if ! command -v $tool >/dev/null; then
      echo "no $tool on PATH"
      exit 1
    fi
  done
  if ! make_hosts 2>/dev/null; then
    echo "cannot create network namespaces with a veth pair here (needs root with CAP_NET_ADMIN and CAP_SYS_ADMIN)"
    exit 1
  fi
  exit 0
fi

if [ $# -eq 0 ]; then
  echo "usage: two_hosts.sh PROGRAM [ARGS...] | --probe" >&2
  exit 2
fi
make_hosts
work=$(mktemp -d)
printf '10.213.0.1\n10.213.0.2\n' >"$work/hosts"
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
# Tells the launcher calls (this script again, from mpiexec) from this one.
export MP_TWO_HOSTS_NS=$ns
# The two namespaces share one kernel, /dev/shm and the boot id, so UCX
# (Debian's MPICH is ch4:ucx) or libfabric would see one machine and pass
# messages through shared memory; TCP makes them cross the veth pair.
export UCX_TLS=tcp,self FI_PROVIDER=tcp
# hydra ends a job that runs longer (seconds).
export MPIEXEC_TIMEOUT=${MPIEXEC_TIMEOUT:-600}
status=0
ip netns exec "$ns.a" unshare --uts sh -c 'hostname a-host; exec "$@"' sh \
  mpiexec.hydra -launcher ssh -launcher-exec "$self" -f "$work/hosts" \
  -localhost 10.213.0.1 -ppn 1 -n 2 "$@" || status=$?
bytes=$(ip netns exec "$ns.a" cat "/sys/class/net/$ns.a/statistics/tx_bytes")
echo "two_hosts.sh: $bytes bytes sent from host a to host b over the veth pair"
exit $status
