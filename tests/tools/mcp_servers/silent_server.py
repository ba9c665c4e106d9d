"""A stdio "MCP server" that starts and never answers its handshake.

Run ``python silent_server.py STARTS [--fail-first]``: each start appends this process's id as
a line to the file STARTS. With ``--fail-first``, the first start exits at once and every later
one serves the catalog server instead (a server that was down and came back).
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
    catalog = Path(__file__).with_name("catalog_server.py")
    os.execv(sys.executable, [sys.executable, str(catalog), "stdio"])
time.sleep(3600)
