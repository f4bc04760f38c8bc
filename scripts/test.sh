#!/usr/bin/env bash
# The whole test suite: format, lints, docs, unit/integration tests, then the interop suite
# (official Python and JS A2A clients) against a freshly started switchboard, the README's
# tour, the split deployment, the Python worker, the benchmark harness's smoke mode, and
# our A2A client against the official SDK servers.
#
#   bash scripts/test.sh           # everything (what CI runs)
#   bash scripts/test.sh --quick   # the inner loop: the workspace's unit and integration
#                                  # tests, without the cluster, interop and bench stages
set -euo pipefail
cd "$(dirname "$0")/.."

# Each stage is headed with the time since the start, so a slow CI run shows where it went.
stage() { printf '== [%d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

# shellcheck source=SCRIPTDIR/lib/apt.sh
. scripts/lib/apt.sh

ensure_redis() {
  stage "redis-server (the Redis backend's tests start their own servers from it)"
  ensure_command redis-server redis-server || { echo "redis-server could not be installed" >&2; exit 1; }
  redis-server --version
}

ensure_tmux() {
  stage "tmux (the CLI's progress display is checked in a real terminal: cli_terminal.rs)"
  # Best effort: without it the terminal test says it skipped.
  ensure_command tmux tmux || echo "tmux could not be installed"
  tmux -V || true
}

if [ "${1:-}" = "--quick" ]; then
  ensure_redis
  ensure_tmux
  # Every test target of the workspace but the clusters' (processes, Redis, kill -9), in
  # one cargo command: two would resolve dependency features twice and build twice.
  targets=()
  for t in crates/*/tests/*.rs; do
    name=$(basename "$t" .rs)
    case $name in cluster*) ;; *) targets+=(--test "$name") ;; esac
  done
  cargo test --workspace --locked --lib --bins "${targets[@]}"
  exit 0
fi

stage "cargo fmt --check"
cargo fmt --all --check
stage "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
stage "cargo doc (no broken link: in the public docs, none to a private item either)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --quiet
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --document-private-items --locked --quiet
ensure_redis
ensure_tmux
stage "cargo test"
cargo test --workspace --locked 2>&1 | tee target/cargo-test.log
grep -q "test result: ok" target/cargo-test.log

# Every later stage runs what this build made. A narrower cargo command (`-p X`, `--test Y`)
# resolves dependency features again for what it selects and rebuilds dozens of crates for
# nothing, so the ignored tests run from their executables (as cargo runs them: from their
# package's directory), listed by this build, which also adds the one binary the tests did
# not need (sb-bench's, which the bench smoke builds with the same selection).
cargo build --workspace --all-targets --locked --message-format=json-render-diagnostics | python3 -c '
import json, os, sys
for m in map(json.loads, sys.stdin):
    if m.get("reason") == "compiler-artifact" and m["target"]["kind"] == ["test"]:
        print(os.path.relpath(m["target"]["src_path"]), os.path.dirname(m["manifest_path"]), m["executable"], sep="\t")
' > target/test-executables
# The ignored tests of one test file, e.g. `run_ignored crates/switchboard/tests/bridge.rs`.
run_ignored() {
  local dir exe
  IFS=$'\t' read -r dir exe < <(awk -F'\t' -v t="$1" '$1 == t {print $2 "\t" $3}' target/test-executables) || true
  [ -n "${exe:-}" ] || { echo "no test executable for $1 in target/test-executables" >&2; return 1; }
  (cd "$dir" && "$exe" --ignored)
}

# The tests that spend minutes waiting (for cron, for processes killed and restarted;
# ignored by a plain `cargo test`) run in the background (no cargo lock held) while the
# interop stages run, one after another so that no two split deployments of theirs run at
# once; their result is collected before the closing tally.
stage "tests that wait minutes (the cluster's kill -9 drills, ceremonies over cron): started in the background"
{
  run_ignored crates/switchboard/tests/cluster.rs &&
    run_ignored crates/switchboard/tests/ceremonies.rs &&
    run_ignored crates/switchboard/tests/cluster_ceremonies.rs &&
    run_ignored crates/switchboard/tests/ceremonies_restart.rs
} > target/slow-tests.log 2>&1 &
slow=$!

stage "deployment files"
bash scripts/validate-deploy.sh

stage "interop (official a2a-sdk and @a2a-js/sdk clients)"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
data_dir=$(mktemp -d)
./target/debug/switchboard serve --listen "127.0.0.1:$port" --data-dir "$data_dir" --webhook-allow 127.0.0.1/32 > target/interop-server.log 2>&1 &
server=$!
trap 'kill $slow $server 2>/dev/null || true; rm -rf "$data_dir"' EXIT
SWITCHBOARD_URL="http://127.0.0.1:$port" bash tests/interop/run.sh 2>&1 | tee target/interop.log

stage "MCP (official MCP Python SDK over stdio and streamable HTTP, against its own all-in-one)"
SWITCHBOARD_BIN=target/debug/switchboard bash tests/mcp/run.sh 2>&1 | tee target/mcp.log

stage "the README's tour, as written, against the same server"
# shellcheck source=lib/pyvenv.sh
. scripts/lib/pyvenv.sh
ensure_venv "${XDG_CACHE_HOME:-$HOME/.cache}/switchboard-interop/venv" tests/interop/python/requirements.txt
SWITCHBOARD_URL="http://127.0.0.1:$port" "$PYVENV_PYTHON" tests/readme/tour.py 2>&1 | tee target/readme-tour.log

stage "interop against the split deployment (redis + 2 gateways, 2 task-state, 2 fan-outs, dispatcher, registry, worker)"
cluster_dir=$(mktemp -d)
trap 'kill $slow $server 2>/dev/null || true; rm -rf "$data_dir"; CLUSTER_DIR="$cluster_dir" bash scripts/local-cluster.sh down >/dev/null 2>&1 || true; rm -rf "$cluster_dir"' EXIT
# A short MCP wait, so the MCP suite's long-work cases (MCP tasks) run through /mcp too.
printf '[mcp]\nwait_secs = 3\n' > "$cluster_dir/switchboard.toml"
CLUSTER_DIR="$cluster_dir" SWITCHBOARD_BIN=target/debug/switchboard SWITCHBOARD_WEBHOOK_ALLOW=127.0.0.1/32 \
  SWITCHBOARD_CONFIG="$cluster_dir/switchboard.toml" bash scripts/local-cluster.sh up
gateway_port=$(awk '$1=="gateway"{print $3; exit}' "$cluster_dir/processes")
SWITCHBOARD_URL="http://127.0.0.1:$gateway_port" bash tests/interop/run.sh 2>&1 | tee -a target/interop.log
stage "MCP through a gateway of the split deployment (official MCP Python SDK over /mcp and stdio)"
SWITCHBOARD_URL="http://127.0.0.1:$gateway_port" SWITCHBOARD_BIN=target/debug/switchboard MCP_WAIT_SECS=3 \
  bash tests/mcp/run.sh 2>&1 | tee target/mcp-split.log
CLUSTER_DIR="$cluster_dir" bash scripts/local-cluster.sh down

stage "the Python worker package (sdk/python: pip install, its pytest suite) and examples/python-worker (the consolidate story) against the split deployment"
SWITCHBOARD_BIN=target/debug/switchboard bash tests/python-worker.sh 2>&1 | tee target/python-worker.log

stage "benchmark harness, smoke mode (a few seconds per scenario: proves it runs, measures nothing)"
bash scripts/bench.sh --smoke 2>&1 | tee target/bench-smoke.log

stage "sb-client against the official SDK servers (the benchmark's peers, set up by the smoke run)"
run_ignored crates/sb-client/tests/sdk_peers.rs 2>&1 | tee -a target/cargo-test.log

stage "bridged agents: the official SDK servers (the same peers) fronted by Switchboard"
run_ignored crates/switchboard/tests/bridge.rs 2>&1 | tee -a target/cargo-test.log

# The whole interop suite again, with echo and consolidate bridged to upstreams written on
# the official SDK servers, a2a-sdk (A2A 1.0) and @a2a-js/sdk (A2A 0.3 only), each behind
# the all-in-one (whose turns follow the stream that opened the upstream task) and the
# split deployment (gateways open upstream tasks, a worker follows them).
for upstream in python js; do
  for deployment in all-in-one split; do
    stage "interop through bridged agents: $upstream upstreams, $deployment"
    DEPLOYMENT=$deployment SWITCHBOARD_BIN=target/debug/switchboard \
      bash tests/interop/bridged.sh "$upstream" 2>&1 | tee -a target/interop.log
  done
done

stage "sb-client against the same upstreams, in each mode they serve (installed by bridged.sh)"
run_ignored crates/sb-client/tests/sdk_upstreams.rs 2>&1 | tee -a target/cargo-test.log

stage "the switchboard CLI against the official Python SDK server directly (the same upstream)"
run_ignored crates/switchboard/tests/cli_sdk_server.rs 2>&1 | tee -a target/cargo-test.log

stage "the CLI's auth login against a real authorization server (oidc-provider, tests/oauth)"
bash tests/oauth/install.sh
run_ignored crates/switchboard/tests/cli_oauth.rs 2>&1 | tee -a target/cargo-test.log

stage "tests that wait minutes (the background run started after cargo test)"
if ! wait "$slow"; then
  cat target/slow-tests.log
  echo "the tests that wait minutes failed" >&2
  exit 1
fi
tee -a target/cargo-test.log < target/slow-tests.log

# One closing line over every runner: cargo's "N passed; M failed", pytest's
# "N passed" (interop and MCP), node's "ℹ pass N" / "ℹ fail N", the Python worker's and
# the README tour's "N passed, M failed".
python3 - <<'PY'
import re
cargo = open("target/cargo-test.log").read()
interop = open("target/interop.log").read()
mcp = open("target/mcp.log").read() + open("target/mcp-split.log").read()
worker = open("target/python-worker.log").read() + open("target/readme-tour.log").read()
passed = sum(int(n) for n in re.findall(r"test result: \w+\. (\d+) passed", cargo))
failed = sum(int(n) for n in re.findall(r"(\d+) failed;", cargo))
passed += sum(int(n) for n in re.findall(r"=+ (\d+) passed", interop))
failed += sum(int(n) for n in re.findall(r"=+ .*?(\d+) failed", interop))
passed += sum(int(n) for n in re.findall(r"^ℹ pass (\d+)", interop, re.M))
failed += sum(int(n) for n in re.findall(r"^ℹ fail (\d+)", interop, re.M))
# The MCP suite runs pytest -q, whose last line reads "M failed, N passed, K skipped in 7.69s".
for summary in re.findall(r"^.*\d+ (?:passed|failed).* in [\d.]+s", mcp, re.M):
    passed += sum(int(n) for n in re.findall(r"(\d+) passed", summary))
    failed += sum(int(n) for n in re.findall(r"(\d+) failed", summary))
for n, m in re.findall(r"(?:python-worker|readme-tour): (\d+) passed, (\d+) failed", worker):
    passed, failed = passed + int(n), failed + int(m)
print(f"{passed} passed, {failed} failed")
PY
