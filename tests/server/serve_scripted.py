"""A real server process whose runs stream a scripted model at a steady pace (for process-level tests).

Usage: ``python -m tests.server.serve_scripted --port P (--sqlite PATH | --redis URL --prefix P) [--record-interval S]``
"""

from __future__ import annotations

import argparse

import uvicorn

from reasonloop.config import KBSettings, RunsSettings, Settings
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.server import create_app
from reasonloop.server.transport.process import uvicorn_options
from tests.llm_runner import LLMRunner

TEXT = " ".join(f"word{i}" for i in range(400))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--sqlite", default="")
    parser.add_argument("--redis", default="")
    parser.add_argument("--prefix", default="reasonloop:")
    parser.add_argument("--kb", default=".reasonloop")
    parser.add_argument("--delay", type=float, default=0.02)
    parser.add_argument("--record-interval", type=float, default=0.05, help="[runs] record_interval_s")
    parser.add_argument("--no-journal", action="store_true")
    args = parser.parse_args()
    runs = (
        RunsSettings(store="redis", redis_url=args.redis, redis_prefix=args.prefix)
        if args.redis
        else RunsSettings(sqlite_path=args.sqlite, record_interval_s=args.record_interval, journal=not args.no_journal)
    )
    settings = Settings(runs=runs, kb=KBSettings(path=args.kb))
    runner = LLMRunner(lambda: ScriptedProvider(replies=[TEXT], chunk_size=4, delay_s=args.delay, repeat_last=True))
    app = create_app(settings, runner=runner)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", **uvicorn_options(settings.server))


if __name__ == "__main__":
    main()
