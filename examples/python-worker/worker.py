#!/usr/bin/env python3
"""A Switchboard remote worker in Python, on the switchboard-worker package (sdk/python).

Its agent, "shout", answers with the user's text upper-cased: a working update with a
progress message, an artifact, then completed. It serves agents configured on the
Switchboard (--agent, default echo), or announces its own (--describe FILE, a JSON file
of agent definitions: Switchboard registers them and serves their cards).

    pip install ./sdk/python
    python worker.py --tasks-url 127.0.0.1:PORT [--agent echo] [--capacity 4]
    python worker.py --tasks-url 127.0.0.1:PORT --describe shout.json   # announces its card
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Awaitable, Callable
from pathlib import Path

from switchboard_worker import Definition, Reporter, TaskContext, Worker, add_arguments, configure


def shout_agent(step_delay: float) -> Callable[[TaskContext, Reporter], Awaitable[None]]:
    """The agent: working (with a progress message), an artifact, then completed, with
    `step_delay` seconds between the steps (to watch the progress, or cancel mid-turn)."""

    async def shout(ctx: TaskContext, report: Reporter) -> None:
        await report.working("shouting...")
        await ctx.sleep(step_delay)  # raises TurnCanceled if the task is canceled meanwhile
        await report.artifact("shout", text=ctx.text.upper(), name="shout")
        await ctx.sleep(step_delay)
        await report.complete(ctx.text.upper())

    return shout


def main() -> None:
    worker = Worker()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser, worker)
    parser.add_argument("--agent", action="append", default=[],
                        help="a configured agent to serve (repeatable; default echo)")
    parser.add_argument("--describe", type=Path,
                        help="a JSON file of agent definitions (an object or a list) to announce")
    parser.add_argument("--step-delay", type=float, default=0.0, help="pause between steps, s")
    args = parser.parse_args()
    configure(worker, args)
    described = json.loads(args.describe.read_text()) if args.describe else []
    definitions = [Definition.from_json(d) for d in (described if isinstance(described, list) else [described])]
    served = [*definitions, *(a for a in args.agent if a not in {d.name for d in definitions})]
    for agent in served or ["echo"]:
        worker.add(shout_agent(args.step_delay), agent)
    worker.run()


if __name__ == "__main__":
    main()
