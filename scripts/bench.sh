#!/usr/bin/env bash
# The benchmark: every scenario (B1–B7) against every server — the Python and JS SDK
# peers, the axum ceiling, Switchboard all-in-one and split — in one run, side by side.
#
#   scripts/bench.sh            # full run (~15 min), writes docs/performance.md
#   scripts/bench.sh --smoke    # a few seconds per scenario (CI), writes target/bench/smoke.md
#
# Extra arguments go to `sb-bench run` (e.g. --servers switchboard,ceiling). Servers run
# on CPU 0, the load generator on CPU 1 (the rest of a bigger machine stays idle, so
# figures compare); on a one-core machine nothing is pinned.
set -euo pipefail
cd "$(dirname "$0")/.."

smoke=0
args=()
for arg in "$@"; do
  if [ "$arg" = --smoke ]; then smoke=1; fi
  args+=("$arg")
done

# shellcheck source=SCRIPTDIR/lib/apt.sh
. scripts/lib/apt.sh
ensure_command redis-server redis-server || { echo "redis-server missing and could not be installed (apt-get install -y redis-server)" >&2; exit 1; }
ensure_command redis-benchmark redis-tools || { echo "redis-benchmark missing and could not be installed (apt-get install -y redis-tools)" >&2; exit 1; }

bash bench/peers/setup.sh

if [ "$smoke" = 1 ]; then
  # The debug build the test suite already made is enough to prove the harness works; the
  # same selection as its build, so that no crate is rebuilt with other features.
  cargo build --quiet --workspace --all-targets
  bin=target/debug
  report=target/bench/smoke.md
else
  cargo build --quiet --release -p switchboard -p sb-bench
  bin=target/release
  report=docs/performance.md
fi
mkdir -p target/bench

pin=()
server_cpus=""
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
  pin=(taskset -c 1)
  server_cpus=0
fi
# 10k held streams need 10k sockets on each side.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

"${pin[@]}" "$bin/sb-bench" run \
  --repo . --switchboard-bin "$bin/switchboard" --work-dir target/bench \
  --server-cpus "$server_cpus" --report "$report" \
  --command-line "scripts/bench.sh${*:+ $*}" "${args[@]}"
