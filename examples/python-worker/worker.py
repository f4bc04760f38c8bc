#!/usr/bin/env python3
"""A Switchboard remote worker in Python, written as documentation by example.

It attaches to a task-state service (Workers.Attach), takes the turns queued for its
agent and reports progress with TaskState.Update, as `switchboard worker` does in Rust.
Its agent, "shout", answers with the user's text upper-cased. The protocol is described
in README.md; the stubs are generated from proto/switchboard/internal/v1/internal.proto
at startup into a temporary directory, so nothing generated is checked in.

    python worker.py --tasks-url 127.0.0.1:PORT [--agent echo] [--capacity 4]
    python worker.py --tasks-url 127.0.0.1:PORT --describe shout.json   # announces its card
"""
import argparse
import atexit
import json
import logging
import os
import queue
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import grpc
from grpc_tools import protoc

log = logging.getLogger("python-worker")

HEARTBEAT_SECS = 3  # the service drops a worker it hears nothing from for 15 s
# States that end a turn: the final ones, and the two that wait for the client.
TURN_ENDING = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED",
               "TASK_STATE_REJECTED", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"}


def load_stubs(proto_root):
    """Runs protoc (bundled with grpcio-tools) and imports the generated modules."""
    out = tempfile.mkdtemp(prefix="switchboard-stubs-")
    atexit.register(shutil.rmtree, out, True)
    proto = Path(proto_root) / "switchboard/internal/v1/internal.proto"
    if protoc.main(["protoc", f"-I{proto_root}", f"--python_out={out}",
                    f"--grpc_python_out={out}", str(proto)]) != 0:
        sys.exit(f"protoc failed on {proto}")
    sys.path.insert(0, out)
    from switchboard.internal.v1 import internal_pb2, internal_pb2_grpc
    return internal_pb2, internal_pb2_grpc


class Canceled(Exception):
    """The service sent Cancel for this turn, or the connection was lost."""


def a2a_error(err):
    """The message of a failed internal call: Switchboard sends the A2A error as raw
    JSON ({"kind": …, "message": …}) in the grpc-status-details-bin trailer."""
    details = dict(err.trailing_metadata() or ()).get("grpc-status-details-bin")
    try:
        return json.loads(details)["message"]
    except (TypeError, ValueError, KeyError):
        return f"{err.code().name}: {err.details()}"


def agent_message(text):
    """An A2A 1.0 Message in ProtoJSON; the service stamps taskId and contextId."""
    return {"messageId": str(uuid.uuid4()), "role": "ROLE_AGENT", "parts": [{"text": text}]}


class Reporter:
    """Reports one turn's progress: each call is one TaskState.Update, i.e. one
    transition of the task, carrying a TaskUpdate (the serde JSON of sb_tasks::TaskUpdate)."""

    def __init__(self, pb, tasks, task_id, canceled, assignment_id="", agent=""):
        self.pb, self.tasks, self.task_id, self.canceled = pb, tasks, task_id, canceled
        # Naming the turn fences the updates: once the turn is no longer leased to this
        # worker (lost, queued again), Switchboard refuses them.
        self.assignment_id, self.agent = assignment_id, agent
        self.ended = False  # reported a state that ends the turn -> settled_by_agent

    def _update(self, update):
        if self.canceled.is_set():
            raise Canceled()
        request = self.pb.UpdateTaskRequest(task_id=self.task_id,
                                            update_json=json.dumps(update).encode(),
                                            assignment_id=self.assignment_id,
                                            agent=self.agent)
        try:
            self.tasks.Update(request, timeout=10)
        except grpc.RpcError as err:
            raise RuntimeError(f"TaskState.Update refused: {a2a_error(err)}") from err

    def status(self, state, text=None):
        message = agent_message(text) if text is not None else None
        self._update({"Status": {"state": state, "message": message}})
        self.ended = self.ended or state in TURN_ENDING

    def artifact(self, artifact_id, name, text, append=False, last_chunk=True):
        artifact = {"artifactId": artifact_id, "name": name, "parts": [{"text": text}]}
        self._update({"Artifact": {"artifact": artifact, "append": append,
                                   "last_chunk": last_chunk}})


def shout(text, report, pause):
    """The agent: working (with a progress message), an artifact, then completed."""
    report.status("TASK_STATE_WORKING", "shouting...")
    pause()
    report.artifact("shout", "shout", text.upper())
    pause()
    report.status("TASK_STATE_COMPLETED", text.upper())


class Session:
    """One Workers.Attach stream. Everything we send goes through `outbox`, which the
    request iterator hands to gRPC (it drains the iterator on a thread of its own)."""

    def __init__(self, args, pb, stubs):
        self.args, self.pb = args, pb
        self.workers, self.tasks = stubs
        self.outbox = queue.Queue()
        self.runs = {}  # assignment_id -> threading.Event, set to cancel the turn
        self.lock = threading.RLock()  # reentrant: the signal handler may call close()
        self.closed = threading.Event()
        self.call = None

    def send(self, **kind):
        self.outbox.put(self.pb.WorkerMessage(**kind))

    def requests(self):
        while (message := self.outbox.get()) is not None:
            yield message

    def heartbeat(self):
        while not self.closed.wait(HEARTBEAT_SECS):
            self.send(heartbeat=self.pb.Heartbeat())

    def run(self):
        """Serves until the stream ends; raises grpc.RpcError when it breaks."""
        # Hello must come first: who we are, which agents we run, how many turns at once.
        # With --describe, the agents' own definitions too: Switchboard registers each
        # (unless an operator defined that agent), so the card is the agent's own.
        self.send(hello=self.pb.Hello(worker_id=self.args.worker_id, agents=self.args.agent,
                                      capacity=self.args.capacity,
                                      definitions=self.args.definitions))
        self.call = self.workers.Attach(self.requests())
        threading.Thread(target=self.heartbeat, daemon=True).start()
        try:
            for command in self.call:  # blocks; a refused Hello raises here
                if command.WhichOneof("kind") == "assignment":
                    canceled = threading.Event()
                    with self.lock:
                        self.runs[command.assignment.assignment_id] = canceled
                    # One thread per turn: the service never sends more than `capacity`.
                    threading.Thread(target=self.turn, args=(command.assignment, canceled),
                                     daemon=True).start()
                elif command.WhichOneof("kind") == "cancel":  # the task reached a final state
                    with self.lock:
                        run = self.runs.get(command.cancel.assignment_id)
                    if run:
                        log.info("cancel: task %s", command.cancel.task_id)
                        run.set()
        finally:
            self.close()

    def close(self):
        """Ends the stream and stops its turns (the service re-queues or fails them)."""
        self.closed.set()
        self.outbox.put(None)
        with self.lock:
            for run in self.runs.values():
                run.set()
        if self.call is not None:
            self.call.cancel()

    def turn(self, assignment, canceled):
        """Runs one turn, then always answers with TurnDone: until then the service holds
        the turn (and one slot of our capacity) for us."""
        task_id, error, report = "", "", None

        def pause():
            if canceled.wait(self.args.step_delay):
                raise Canceled()

        try:
            record = json.loads(assignment.record.json)  # sb_store::TaskRecord as JSON
            message = json.loads(assignment.message_json)  # the A2A Message to answer
            task_id = record["task"]["id"]
            log.info("assignment %s: task %s (agent %s, redeliveries %d)", assignment.assignment_id,
                     task_id, record["agent"], assignment.redeliveries)
            report = Reporter(self.pb, self.tasks, task_id, canceled,
                              assignment.assignment_id, record["agent"])
            if record["agent"] not in self.args.agent:
                raise RuntimeError(f"this worker does not run agent {record['agent']}")
            text = "\n".join(p["text"] for p in message.get("parts", []) if "text" in p)
            shout(text, report, pause)
        except Canceled:
            error = "canceled"
        except Exception as exc:  # noqa: BLE001 - any failure is reported, not raised
            error = str(exc) or type(exc).__name__
            log.warning("task %s failed: %s", task_id, error)
        with self.lock:
            self.runs.pop(assignment.assignment_id, None)
        # settled_by_agent=False asks the service to fail the task if it is still
        # submitted/working (with `error` as the reason); a finished task is left alone.
        settled = bool(report and report.ended and not error)
        if not self.closed.is_set():
            self.send(turn_done=self.pb.TurnDone(
                task_id=task_id, assignment_id=assignment.assignment_id,
                settled_by_agent=settled, error=error))
        log.info("turn done: task %s settled_by_agent=%s %s", task_id, settled, error)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks-url", required=True, help="a task-state service, host:port")
    parser.add_argument("--agent", action="append", help="repeatable; default echo")
    parser.add_argument("--capacity", type=int, default=4, help="turns run at once")
    parser.add_argument("--worker-id", default=f"python-{os.uname().nodename}-{os.getpid()}")
    parser.add_argument("--step-delay", type=float, default=0.0, help="pause between steps, s")
    parser.add_argument("--proto-root", default=Path(__file__).resolve().parents[2] / "proto")
    parser.add_argument("--describe", type=Path,
                        help="a JSON file of agent definitions (an object or a list) to announce")
    args = parser.parse_args()
    args.agent = args.agent or ["echo"]
    args.definitions = []
    if args.describe:
        described = json.loads(args.describe.read_text())
        described = described if isinstance(described, list) else [described]
        args.definitions = [json.dumps(d) for d in described]
        # An announced agent is served by this worker.
        args.agent += [d["name"] for d in described if d["name"] not in args.agent]
    args.tasks_url = args.tasks_url.removeprefix("http://")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")

    pb, pb_grpc = load_stubs(args.proto_root)
    channel = grpc.insecure_channel(args.tasks_url)
    stubs = (pb_grpc.WorkersStub(channel), pb_grpc.TaskStateStub(channel))
    stopping = threading.Event()
    session = None

    def stop(signum, _frame):
        log.info("signal %d: stopping", signum)
        stopping.set()
        if session is not None:
            session.close()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, stop)
    backoff = 0.1
    while not stopping.is_set():
        session, started = Session(args, pb, stubs), time.monotonic()
        log.info("attaching to %s as %s (agents %s, capacity %d)", args.tasks_url,
                 args.worker_id, ",".join(args.agent), args.capacity)
        try:
            session.run()
            why = "the service closed the stream"
        except grpc.RpcError as err:
            why = f"{err.code().name}: {err.details()}"
        if not stopping.is_set():  # reconnect; quickly if that session was attached a while
            backoff = 0.2 if time.monotonic() - started > 15 else min(backoff * 2, 5.0)
            log.warning("worker stream ended (%s); reconnecting in %.1fs", why, backoff)
            stopping.wait(backoff)
    channel.close()


if __name__ == "__main__":
    main()
