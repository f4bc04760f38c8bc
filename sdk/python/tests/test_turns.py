"""A turn end to end against the fake service: the updates each verb sends, and the
TurnDone that says how the turn ended."""

from __future__ import annotations

import asyncio
import json

from conftest import fast_worker
from fake_switchboard import FakeSwitchboard

from switchboard_worker import Reporter, TaskContext, Worker


async def test_hello_announces_agents_capacity_and_definitions(fake: FakeSwitchboard, serving) -> None:
    from switchboard_worker import Definition, Skill

    worker = fast_worker(fake.port, capacity=7)
    worker.add(lambda_agent, "echo")
    worker.add(lambda_agent, Definition(name="notes", description="Keeps notes",
                                        skills=[Skill("note.add", "Add a note", tags=["notes"])]))
    serving(worker)
    hello = (await fake.connection()).hello
    assert hello.worker_id == "test-worker"
    assert list(hello.agents) == ["echo", "notes"]
    assert hello.capacity == 7
    assert [json.loads(d) for d in hello.definitions] == [{
        "name": "notes", "kind": "worker", "description": "Keeps notes",
        "skills": [{"id": "note.add", "name": "Add a note", "description": "", "tags": ["notes"]}]}]


async def lambda_agent(ctx: TaskContext, report: Reporter) -> None:
    await report.complete(ctx.text)


async def test_a_turn_reports_working_artifact_and_completed_in_order(fake: FakeSwitchboard, serving) -> None:
    worker = fast_worker(fake.port)

    @worker.agent("echo")
    async def shout(ctx: TaskContext, report: Reporter) -> None:
        await report.working("shouting...")
        await report.artifact("shout", text=ctx.text.upper(), name="shout")
        await report.complete(ctx.text.upper())

    serving(worker)
    conn = await fake.connection()
    assignment = conn.assign("hello")
    done = await conn.turn_done()
    assert (done.assignment_id, done.settled_by_agent, done.error) == (assignment, True, "")
    requests = [r for r, _ in fake.updates]
    assert {(r.assignment_id, r.agent) for r in requests} == {(assignment, "echo")}
    working, art, completed = [u for _, u in fake.updates]
    assert working["Status"]["state"] == "TASK_STATE_WORKING"
    assert working["Status"]["message"]["parts"] == [{"text": "shouting..."}]
    assert working["Status"]["message"]["role"] == "ROLE_AGENT"
    assert art == {"Artifact": {"artifact": {"artifactId": "shout", "name": "shout", "parts": [{"text": "HELLO"}]},
                                "append": False, "last_chunk": True}}
    assert completed["Status"]["state"] == "TASK_STATE_COMPLETED"
    assert completed["Status"]["message"]["parts"] == [{"text": "HELLO"}]


async def test_streamed_text_is_deltas_then_the_whole_text_before_completed(fake: FakeSwitchboard, serving) -> None:
    worker = fast_worker(fake.port)

    @worker.agent("echo")
    async def stream(ctx: TaskContext, report: Reporter) -> None:
        for delta in ["Hel", "lo, ", "world"]:
            await report.stream_text("out", delta, name="out")
        await report.complete()

    serving(worker)
    conn = await fake.connection()
    conn.assign("go")
    assert (await conn.turn_done()).settled_by_agent
    chunks = [(u["Artifact"]["artifact"]["parts"][0]["text"], u["Artifact"]["append"], u["Artifact"]["last_chunk"])
              for _, u in fake.updates if "Artifact" in u]
    assert chunks == [("Hel", False, False), ("lo, ", True, False), ("world", True, False),
                      ("Hello, world", False, True)]
    assert fake.updates[-1][1]["Status"] == {"state": "TASK_STATE_COMPLETED", "message": None}


async def test_input_required_settles_the_turn_and_the_answer_comes_as_the_next_turn(
        fake: FakeSwitchboard, serving) -> None:
    worker = fast_worker(fake.port)
    seen: list[list[str]] = []

    @worker.agent("echo")
    async def ask(ctx: TaskContext, report: Reporter) -> None:
        seen.append(ctx.user_texts())
        if len(ctx.user_texts()) == 1:
            await report.input_required("which one?")
        else:
            await report.complete(f"you said {ctx.user_texts()[-1]}")

    serving(worker)
    conn = await fake.connection()
    conn.assign("facts", task_id="t1")
    assert (await conn.turn_done()).settled_by_agent
    assert fake.updates_of("t1")[-1]["Status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    first = {"messageId": "m0", "role": "ROLE_USER", "parts": [{"text": "facts"}]}
    question = {"messageId": "q", "role": "ROLE_AGENT", "parts": [{"text": "which one?"}]}
    conn.assign("the first", task_id="t1", history=[first, question])
    assert (await conn.turn_done()).settled_by_agent
    assert seen == [["facts"], ["facts", "the first"]]
    assert fake.updates_of("t1")[-1]["Status"]["message"]["parts"] == [{"text": "you said the first"}]


async def test_how_a_turn_ended_is_what_turn_done_says(fake: FakeSwitchboard, serving) -> None:
    worker = fast_worker(fake.port)

    @worker.agent("echo")
    async def varied(ctx: TaskContext, report: Reporter) -> None:
        await report.working()
        if ctx.text == "raise":
            raise RuntimeError("the model is down")
        if ctx.text == "keep":
            report.keep_open()
        if ctx.text == "auth":
            await report.auth_required("sign in first")
        if ctx.text == "reject":
            await report.reject("not for me")
        if ctx.text == "fail":
            await report.fail("could not")

    serving(worker)
    conn = await fake.connection()
    outcomes = {}
    for text in ["raise", "return", "keep", "auth", "reject", "fail"]:
        conn.assign(text, task_id=text)
        done = await conn.turn_done()
        outcomes[text] = (done.task_id, done.settled_by_agent, done.error)
    assert outcomes == {
        "raise": ("raise", False, "the model is down"),
        "return": ("return", False, ""),  # Switchboard fails it: no state chosen
        "keep": ("keep", True, ""),
        "auth": ("auth", True, ""),
        "reject": ("reject", True, ""),
        "fail": ("fail", True, ""),
    }
    states = {t: fake.updates_of(t)[-1]["Status"]["state"] for t in ["auth", "reject", "fail"]}
    assert states == {"auth": "TASK_STATE_AUTH_REQUIRED", "reject": "TASK_STATE_REJECTED",
                      "fail": "TASK_STATE_FAILED"}


async def test_an_assignment_for_an_agent_not_served_is_answered_with_an_error(fake: FakeSwitchboard, serving) -> None:
    worker = fast_worker(fake.port)
    worker.add(lambda_agent, "echo")
    serving(worker)
    conn = await fake.connection()
    conn.assign("hi", agent="other", task_id="t")
    done = await conn.turn_done()
    assert (done.settled_by_agent, done.error) == (False, "this worker does not run agent other")
    assert fake.updates == []


async def test_turns_run_concurrently_up_to_capacity(fake: FakeSwitchboard, serving) -> None:
    worker = fast_worker(fake.port, capacity=3)
    running, peak, release = 0, 0, asyncio.Event()

    @worker.agent("echo")
    async def slow(ctx: TaskContext, report: Reporter) -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await release.wait()
        running -= 1
        await report.complete()

    serving(worker)
    conn = await fake.connection()
    assert conn.hello.capacity == 3
    for i in range(3):  # Switchboard hands out at most `capacity` turns
        conn.assign(f"t{i}")
    for _ in range(50):
        if peak == 3:
            break
        await asyncio.sleep(0.02)
    assert peak == 3, "the three turns did not run at once"
    release.set()
    dones = [await conn.turn_done() for _ in range(3)]
    assert all(d.settled_by_agent for d in dones)


async def test_heartbeats_keep_the_stream_alive(fake: FakeSwitchboard, serving) -> None:
    worker = fast_worker(fake.port, heartbeat=0.05)
    worker.add(lambda_agent, "echo")
    serving(worker)
    conn = await fake.connection()
    await asyncio.sleep(0.4)
    assert conn.heartbeats >= 4


async def test_worker_defaults_to_the_rust_workers_timings() -> None:
    worker = Worker("127.0.0.1:1")
    assert (worker.heartbeat, worker.cancel_grace, worker.backoff.first, worker.backoff.cap) == (3.0, 5.0, 0.2, 5.0)
