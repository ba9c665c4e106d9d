"""Run the command line in a new interpreter and see which modules it imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.environment import is_outside_setting

PROBE = """
import json, sys
from reasonloop.cli import main
try:
    main(sys.argv[2:])
except SystemExit:
    pass
sys.stdout.flush()
with open(sys.argv[1], "w") as f:
    json.dump(sorted(sys.modules), f)
"""


def run_fresh(cwd: Path, *argv: str) -> tuple[str, set[str]]:
    """Stdout of ``reasonloop ARGV`` run in ``cwd`` by a new process, and the modules it imported.

    The process gets no ``REASONLOOP_*`` variables; ``cwd`` should hold no ``reasonloop.toml``.
    """
    modules = cwd / "modules.json"
    env = {k: v for k, v in os.environ.items() if not is_outside_setting(k)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(modules), *argv], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout, set(json.loads(modules.read_text()))
