"""A stdio "MCP server" that starts and never answers its handshake.

Run ``python silent_server.py STARTS [--fail-first]``: each start appends this process's id as
a line to the file STARTS. With ``--fail-first``, the first start exits at once and every later
one serves the catalog server instead (a server that was down and came back). With ``--hold FILE``
too, a later start waits until FILE exists before it serves (a server that takes its time to come back).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

starts = Path(sys.argv[1])
earlier = starts.read_text().splitlines() if starts.exists() else []
with starts.open("a") as out:
    out.write(f"{os.getpid()}\n")
if "--fail-first" in sys.argv:
    if not earlier:
        sys.exit(3)
    if "--hold" in sys.argv:
        hold = Path(sys.argv[sys.argv.index("--hold") + 1])
        while not hold.exists():
            time.sleep(0.02)
    catalog = Path(__file__).with_name("catalog_server.py")
    os.execv(sys.executable, [sys.executable, str(catalog), "stdio"])
time.sleep(3600)
