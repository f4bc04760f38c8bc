"""The README's first worker runs as written (against the fake service)."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import fast_worker
from fake_switchboard import FakeSwitchboard

README = Path(__file__).resolve().parents[1] / "README.md"


async def test_the_readmes_worker_serves_a_turn(fake: FakeSwitchboard, serving) -> None:
    code = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)[0]
    namespace: dict[str, object] = {"__name__": "readme"}  # not __main__: no worker.main()
    exec(compile(code, str(README), "exec"), namespace)
    worker = fast_worker(fake.port)
    worker.agents = namespace["worker"].agents  # type: ignore[attr-defined]
    serving(worker)
    conn = await fake.connection()
    assert list(conn.hello.agents) == ["echo"]
    conn.assign("hello")
    assert (await conn.turn_done()).settled_by_agent
    assert [u for _, u in fake.updates][-1]["Status"]["message"]["parts"] == [{"text": "HELLO"}]
    assert [u["Artifact"]["artifact"]["parts"] for _, u in fake.updates if "Artifact" in u] == [[{"text": "HELLO"}]]
