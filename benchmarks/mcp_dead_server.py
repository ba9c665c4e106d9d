"""What a configured MCP server that never answers its handshake costs the agents of one process.

Two stdio servers are configured: ``catalog`` (a working server from the test suite) and ``dead``
(a process that starts and never speaks), each with ``connect_timeout_s`` (2 s by default). Three
agents share one :class:`~reasonloop.agents.AgentResources`, as in ``reasonloop serve``:

- ``catalog_only`` names only ``mcp:catalog``;
- ``both`` names ``mcp:catalog`` and ``mcp:dead``;
- a second and third run of ``both``, and a new ``both`` agent (a long-lived process asking again).

The floor is the first run of ``catalog_only`` in a process where only ``catalog`` is configured
(it includes starting that server).

Each row is the wall time of one run (a scripted model answering at once, so the time is the MCP
client's), the goal beside it: a dead server costs at most its connect timeout, once, and only
agents that name it.

Usage::

    python benchmarks/mcp_dead_server.py                    # connect_timeout_s = 2
    python benchmarks/mcp_dead_server.py --connect-timeout 1 --dead 2
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CATALOG = ROOT / "tests" / "tools" / "mcp_servers" / "catalog_server.py"
SILENT = "import time; time.sleep(600)"


async def _run(args: argparse.Namespace) -> list[tuple[str, float, str]]:
    from reasonloop.agents import Agent, AgentResources
    from reasonloop.config import load_settings
    from reasonloop.llm.scripted import ScriptedProvider

    dead = [f"dead{i}" for i in range(args.dead)]
    servers = [{"name": "catalog", "command": sys.executable, "args": [str(CATALOG), "stdio"]}]
    servers += [
        {"name": n, "command": sys.executable, "args": ["-c", SILENT], "connect_timeout_s": args.connect_timeout}
        for n in dead
    ]
    tmp = tempfile.mkdtemp(prefix="mcp-dead-")

    def settings_for(configured: list[dict]) -> object:
        return load_settings(
            kb={"path": f"{tmp}/kb"},
            tools={"mcp_servers": configured},
            agents={
                "catalog_only": {"reasoning": "toolcall", "tools": ["mcp:catalog"], "kb": False},
                "both": {
                    "reasoning": "toolcall",
                    "tools": ["mcp:catalog", *(f"mcp:{n}" for n in dead if any(s["name"] == n for s in configured))],
                    "kb": False,
                },
            },
        )

    async def timed(agent: Agent) -> float:
        start = time.perf_counter()
        [e async for e in agent.stream("hello")]
        return time.perf_counter() - start

    def agent(name: str, settings: object, resources: AgentResources) -> Agent:
        return Agent.from_config(
            name, settings, llm=ScriptedProvider(replies=["ok"], repeat_last=True), resources=resources
        )

    rows: list[tuple[str, float, str]] = []
    floor_resources = AgentResources()
    try:  # the floor: the working server alone (the second start: imports paid by the first)
        await timed(agent("catalog_only", settings_for(servers[:1]), floor_resources))
        await floor_resources.aclose()
        floor = await timed(agent("catalog_only", settings_for(servers[:1]), floor_resources))
    finally:
        await floor_resources.aclose()
    rows.append(("floor: catalog alone", floor, "-"))
    settings = settings_for(servers)
    resources = AgentResources()
    bound = args.connect_timeout
    try:
        rows.append(("catalog_only, first run", await timed(agent("catalog_only", settings, resources)), "~floor"))
        both = agent("both", settings, resources)
        rows.append(("both, first run", await timed(both), f"<= {bound:g} s"))
        rows.append(("both, second run", await timed(both), "~0 s"))
        rows.append(("both, third run", await timed(both), "~0 s"))
        fresh = agent("both", settings, resources)
        rows.append(("another 'both' agent", await timed(fresh), "~0 s"))
        closing = time.perf_counter()
    finally:
        await resources.aclose()
    rows.append(("closing the resources", time.perf_counter() - closing, "-"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connect-timeout", type=float, default=2.0, help="connect_timeout_s of the dead servers")
    parser.add_argument("--dead", type=int, default=1, help="how many dead servers are configured")
    args = parser.parse_args()
    rows = asyncio.run(_run(args))
    print(f"dead servers: {args.dead}, connect_timeout_s: {args.connect_timeout:g}")
    print(f"{'run':<26}{'seconds':>9}  goal")
    for label, seconds, goal in rows:
        print(f"{label:<26}{seconds:>9.2f}  {goal}")


if __name__ == "__main__":
    main()
