#!/usr/bin/env bash
# End-to-end check of examples/python-worker: a worker written in Python, from the proto
# alone, serving the `echo` agent of a local split cluster (scripts/local-cluster.sh with
# WORKERS=0, so it is the only worker; its replies are upper-case, unlike the Rust echo).
#
#   tests/python-worker.sh          # SWITCHBOARD_BIN defaults to target/debug/switchboard
#
# Needs python3 (with venv or pip) and redis-server. grpcio/grpcio-tools go to a venv in
# ${XDG_CACHE_HOME:-~/.cache}/switchboard-python-worker, reinstalled only when
# examples/python-worker/requirements.txt changes. Everything started is stopped on exit;
# the cluster's logs are kept (and their path printed) when a check fails.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export PYTHONDONTWRITEBYTECODE=1
bin="${SWITCHBOARD_BIN:-target/debug/switchboard}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/switchboard-python-worker"
example="$root/examples/python-worker"
[ -x "$bin" ] || { echo "no switchboard binary at $bin (cargo build, or set SWITCHBOARD_BIN)" >&2; exit 1; }
cluster="$(mktemp -d "${TMPDIR:-/tmp}/switchboard-python-worker.XXXXXX")"
passed=0
failed=0
workers=()  # PIDs of the Python workers started here

log() { printf '\n== %s\n' "$*"; }
pass() { passed=$((passed + 1)); echo "ok   - $1"; }
fail() { failed=$((failed + 1)); echo "FAIL - $1${2:+: $2}"; }

cleanup() {
  local pid
  for pid in "${workers[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${workers[@]}"; do
    for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  done
  CLUSTER_DIR="$cluster" scripts/local-cluster.sh down >/dev/null 2>&1
  if [ "${finished:-0}" = 1 ] && [ "$failed" -eq 0 ] || [ ! -d "$cluster/logs" ]; then
    rm -rf "$cluster"
  else
    echo "logs kept in $cluster/logs" >&2
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- Python environment (scripts/lib/pyvenv.sh, as tests/interop/run.sh) ----------------
# shellcheck source=SCRIPTDIR/../scripts/lib/pyvenv.sh
. "$root/scripts/lib/pyvenv.sh"
py=""
setup_python() {
  ensure_venv "$cache/venv" "$example/requirements.txt" log && py="$PYVENV_PYTHON"
}

# --- helpers --------------------------------------------------------------------------
attached() { cat "$cluster"/logs/tasks-*.log 2>/dev/null | grep -c "worker attached"; }

# Starts worker.py (extra flags: "$@") and waits until the task-state service logged it.
start_worker() {
  local before pid; before=$(attached)
  "$py" "$example/worker.py" --tasks-url "127.0.0.1:$tasks_port" "$@" \
    >> "$cluster/logs/python-worker.log" 2>&1 &
  pid=$!; workers+=("$pid"); worker_pid=$pid
  for _ in $(seq 300); do
    [ "$(attached)" -gt "$before" ] && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "the Python worker did not attach; its log:" >&2
  tail -n 20 "$cluster/logs/python-worker.log" >&2
  return 1
}

# Waits up to 10 s for a line matching $1 in the worker log.
worker_logged() {
  for _ in $(seq 100); do
    grep -q -- "$1" "$cluster/logs/python-worker.log" && return 0
    sleep 0.1
  done
  return 1
}

# The A2A client: `client SCENARIO [ARG]` runs one scenario against the gateway and exits
# non-zero with the reason when its expectations fail. Standard library only.
cat > "$cluster/client.py" <<'EOF'
import json, os, subprocess, sys, urllib.request

gateway, scenario = sys.argv[1], sys.argv[2]
arg = sys.argv[3] if len(sys.argv) > 3 else None
url = f"{gateway}/agents/echo/a2a"
headers = {"content-type": "application/json", "A2A-Version": "1.0"}

def call(method, params, rid=1):
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
    return urllib.request.urlopen(urllib.request.Request(url, body, headers), timeout=30)

def message(text):
    return {"message": {"role": "ROLE_USER", "messageId": os.urandom(8).hex(),
                        "parts": [{"text": text}]}}

def stream(text, on_working=None):
    """SendStreamingMessage: every event's result, in order; runs on_working(task_id) once."""
    events, task_id = [], None
    with call("SendStreamingMessage", message(text)) as response:
        for line in response:
            if not line.startswith(b"data:"):
                continue
            reply = json.loads(line[5:])
            if "error" in reply:
                sys.exit(f"stream error: {reply['error']}")
            event = reply["result"]
            events.append(event)
            task_id = task_id or (event.get("task") or {}).get("id")
            if on_working and state(event) == "TASK_STATE_WORKING":
                on_working(task_id)
                on_working = None
    return events

def state(event):
    body = event.get("task") or event.get("statusUpdate") or {}
    return body.get("status", {}).get("state")

def text_of(parts):
    return "".join(p.get("text", "") for p in parts)

def expect(cond, what):
    if not cond:
        sys.exit(what)

if scenario == "blocking":
    with call("SendMessage", message("hello")) as response:
        reply = json.load(response)
    task = reply.get("result", {}).get("task")
    expect(task, f"no task in {reply}")
    expect(task["status"]["state"] == "TASK_STATE_COMPLETED", f"state {task['status']}")
    arts = [text_of(a["parts"]) for a in task.get("artifacts", [])]
    expect(arts == ["HELLO"], f"artifacts {arts}")
    expect(text_of(task["status"]["message"]["parts"]) == "HELLO", "status message")
    history = [text_of(m["parts"]) for m in task.get("history", [])]
    expect("shouting..." in history, f"progress message not in history {history}")
elif scenario == "streaming":
    events = stream("stream me")
    states = [state(e) for e in events if state(e)]
    expect(states[:1] == ["TASK_STATE_SUBMITTED"], f"states {states}")
    expect("TASK_STATE_WORKING" in states and states[-1] == "TASK_STATE_COMPLETED",
           f"states {states}")
    expect(states.index("TASK_STATE_WORKING") < states.index("TASK_STATE_COMPLETED"),
           f"states {states}")
    arts = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
    expect(len(arts) == 1 and text_of(arts[0]["artifact"]["parts"]) == "STREAM ME"
           and arts[0].get("lastChunk") is True, f"artifact updates {arts}")
elif scenario == "cancel":
    def cancel(task_id):
        with call("CancelTask", {"id": task_id}, rid=2) as response:
            reply = json.load(response)
        expect(reply.get("result", {}).get("status", {}).get("state") == "TASK_STATE_CANCELED",
               f"CancelTask answered {reply}")
    events = stream("cancel me", on_working=cancel)
    states = [state(e) for e in events if state(e)]
    expect(states[-1:] == ["TASK_STATE_CANCELED"], f"states {states}")
    expect(not any("artifactUpdate" in e for e in events), "an artifact after the cancel")
    print(events[0]["task"]["id"])
elif scenario == "kill":
    events = stream("kill me", on_working=lambda _: subprocess.run(["kill", "-9", arg]))
    last = events[-1].get("statusUpdate", {}).get("status", {})
    expect(last.get("state") == "TASK_STATE_FAILED", f"last event {events[-1]}")
    reason = text_of(last.get("message", {}).get("parts", []))
    expect("worker running this task was lost" in reason, f"reason {reason!r}")
elif scenario == "card":
    # The worker announced shout.json (arg): the card is exactly that definition's.
    defined = json.load(open(arg))
    def card_of(agent):
        with urllib.request.urlopen(f"{gateway}/agents/{agent}/.well-known/agent-card.json",
                                    timeout=10) as response:
            return json.load(response)
    card = card_of("shout")
    for field, key in [("description", "description"), ("version", "version"),
                       ("provider", "provider"), ("documentation_url", "documentationUrl")]:
        expect(card.get(key) == defined[field], f"{key}: {card.get(key)!r} != {defined[field]!r}")
    skills = [(s["id"], s["name"], s["description"], s["tags"], s.get("examples"))
              for s in card["skills"]]
    wanted = [(s["id"], s["name"], s["description"], s["tags"], s.get("examples"))
              for s in defined["skills"]]
    expect(skills == wanted, f"skills {skills} != {wanted}")
    expect(card["skills"][1].get("outputModes") == ["text/plain"], f"skill modes {card['skills'][1]}")
    extensions = {e["uri"]: e for e in card["capabilities"].get("extensions", [])}
    ext = defined["extensions"][0]
    expect(extensions.get(ext["uri"], {}).get("params") == ext["params"], f"extensions {extensions}")
    echo = card_of("echo")
    expect(echo["skills"][0]["id"] == "echo" and echo["description"] != card["description"],
           f"the echo agent's card changed: {echo}")
    url = f"{gateway}/agents/shout/a2a"
    with call("SendMessage", message("announce me")) as response:
        reply = json.load(response)
    task = reply.get("result", {}).get("task", {})
    expect(task.get("status", {}).get("state") == "TASK_STATE_COMPLETED", f"reply {reply}")
    expect([text_of(a["parts"]) for a in task.get("artifacts", [])] == ["ANNOUNCE ME"],
           f"artifacts {task.get('artifacts')}")
else:
    sys.exit(f"unknown scenario {scenario}")
EOF

client() { python3 "$cluster/client.py" "http://127.0.0.1:$gw_port" "$@"; }

# --- the run --------------------------------------------------------------------------
setup_python || { echo "cannot install $example/requirements.txt" >&2; exit 1; }

log "starting a local cluster without Rust workers in $cluster"
CLUSTER_DIR="$cluster" WORKERS=0 SWITCHBOARD_BIN="$bin" scripts/local-cluster.sh up || exit 1
tasks_port=$(awk '$1 == "tasks" { print $3; exit }' "$cluster/processes")
gw_port=$(awk '$1 == "gateway" { print $3; exit }' "$cluster/processes")
[ -n "$tasks_port" ] && [ -n "$gw_port" ] || { echo "no tasks/gateway in $cluster/processes" >&2; exit 1; }

log "Python worker against task-state 127.0.0.1:$tasks_port"
if start_worker; then pass "worker attaches (Hello accepted)"; else fail "worker attaches"; exit 1; fi

out=$(client blocking 2>&1) && pass "blocking SendMessage: completed, artifact HELLO" \
  || fail "blocking SendMessage" "$out"
out=$(client streaming 2>&1) && pass "SendStreamingMessage: submitted, working, artifact, completed" \
  || fail "SendStreamingMessage" "$out"

kill -TERM "$worker_pid"
for _ in $(seq 50); do kill -0 "$worker_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$worker_pid" 2>/dev/null; then fail "worker stops on SIGTERM within 5 s"
else wait "$worker_pid"; rc=$?
  [ "$rc" -eq 0 ] && pass "worker stops on SIGTERM" || fail "worker stops on SIGTERM" "exit $rc"
fi

log "a slow worker (2 s between steps): cancel and kill mid-task"
if start_worker --step-delay 2; then
  if task_id=$(client cancel 2>&1); then
    if worker_logged "turn done: task $task_id settled_by_agent=False canceled"; then
      pass "CancelTask mid-turn: task canceled, worker got Cancel and stopped the turn"
    else fail "CancelTask mid-turn" "the worker did not log stopping task $task_id"; fi
  else fail "CancelTask mid-turn" "$task_id"; fi
  out=$(client kill "$worker_pid" 2>&1) && pass "worker killed mid-task: task failed (worker lost)" \
    || fail "worker killed mid-task" "$out"
  wait "$worker_pid" 2>/dev/null
else
  fail "slow worker attaches"
fi

log "a worker announcing its own agent (examples/python-worker/shout.json)"
if start_worker --agent shout --describe "$example/shout.json"; then
  out=$(client card "$example/shout.json" 2>&1) \
    && pass "the announced agent is served with exactly its definition's card; echo's is unchanged" \
    || fail "the announced agent's card" "$out"
  kill -TERM "$worker_pid"; wait "$worker_pid" 2>/dev/null
else
  fail "a worker announcing its agent attaches"
fi

log "a worker for an agent that is not configured"
"$py" "$example/worker.py" --tasks-url "127.0.0.1:$tasks_port" --agent no-such-agent \
  >> "$cluster/logs/python-worker.log" 2>&1 &
workers+=("$!")
if worker_logged 'INVALID_ARGUMENT: agent "no-such-agent" is not registered'; then
  pass "Hello for an unknown agent is refused (and retried with backoff)"
else fail "Hello for an unknown agent is refused"; fi

finished=1
echo
echo "python-worker: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
