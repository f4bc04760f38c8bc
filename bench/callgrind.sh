#!/usr/bin/env bash
# Instructions per request of the all-in-one server under callgrind: a steadier measure
# than CPU time on a shared machine (user-space instructions only; the kernel's share is
# not counted). For comparing two builds, not for the report.
#
#   bench/callgrind.sh [BIN_DIR] [SCENARIO]   # default target/release, send
#   SPLIT=1 bench/callgrind.sh [BIN_DIR] [SCENARIO]
#
# With SPLIT=1 the measured process is a gateway of the split deployment: a cluster
# comes up (scripts/local-cluster.sh, one process per service), and one more gateway
# joins it under callgrind; the load goes to that one.
#
# BIN_DIR holds `switchboard` and `sb-bench` (a release build with debug symbols). Env:
# C (concurrency, 16), D (measured seconds, 10; compare builds at the same D: a fresh
# store's first seconds cost more per request, 355k instructions over 3 s against 300k
# over 10 s on one build). Needs valgrind (apt-get install -y
# valgrind). Prints the load line, instructions per request and the top functions by
# self cost; the callgrind file stays in target/bench for callgrind_annotate or kcachegrind.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release}
scenario=${2:-send}
command -v valgrind >/dev/null || { echo "valgrind missing (apt-get install -y valgrind)" >&2; exit 1; }
mkdir -p target/bench
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
data=$(mktemp -d)
out=target/bench/callgrind.$scenario.out
rm -f "$out" "$out".*
cluster=""
cleanup() {
  kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  [ -z "$cluster" ] || CLUSTER_DIR="$cluster" bash scripts/local-cluster.sh down >/dev/null 2>&1
  rm -rf "$data"
}
if [ "${SPLIT:-0}" = 1 ]; then
  cluster="$data/cluster"
  CLUSTER_DIR="$cluster" SWITCHBOARD_BIN="$bin/switchboard" SWITCHBOARD_CONFIG=bench/switchboard.toml \
    RUST_LOG=warn GATEWAYS=1 TASKS=1 FANOUTS=1 DISPATCHERS=1 REGISTRIES=1 WORKERS=1 \
    bash scripts/local-cluster.sh up > target/bench/callgrind-cluster.log 2>&1 \
    || { tail -n 30 target/bench/callgrind-cluster.log >&2; exit 1; }
  # The cluster's addresses, as its own processes got them (its env also names `bin`).
  server_bin="$bin/switchboard"
  ( set -a; . "$cluster/env"; set +a
    SWITCHBOARD_CONFIG=bench/switchboard.toml RUST_LOG=warn \
      exec valgrind --tool=callgrind --callgrind-out-file="$out" \
      "$server_bin" serve --services gateway --listen "127.0.0.1:$port" ) \
    > target/bench/callgrind-server.log 2>&1 &
else
  SWITCHBOARD_CONFIG=bench/switchboard.toml RUST_LOG=warn \
    valgrind --tool=callgrind --callgrind-out-file="$out" \
    "$bin/switchboard" serve --listen "127.0.0.1:$port" --data-dir "$data" \
    > target/bench/callgrind-server.log 2>&1 &
fi
pid=$!
trap cleanup EXIT
for _ in $(seq 600); do
  "$bin/switchboard" health "127.0.0.1:$port" >/dev/null 2>&1 && break
  sleep 0.1
done
url="http://127.0.0.1:$port/agents/bench"
# Warm up (connections, caches, lazily built state), then count only the measured window.
"$bin/sb-bench" load --url "$url" --scenario "$scenario" -c "${C:-16}" -d 3 >/dev/null
callgrind_control -z "$pid" >/dev/null 2>&1
line=$("$bin/sb-bench" load --url "$url" --scenario "$scenario" -c "${C:-16}" -d "${D:-10}")
callgrind_control -d "$pid" >/dev/null 2>&1
sleep 1
echo "$line"
rps=$(echo "$line" | sed -n 's/.* rps=\([0-9.]*\).*/\1/p')
python3 bench/callgrind_self.py "$(ls -t "$out".* | head -1)" "$(python3 -c "print($rps * ${D:-10})")"
