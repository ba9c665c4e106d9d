"""A real ``reasonloop serve`` on loopback with the scripted model, and headless Chromium.

Debian's ``chromium`` drives the tests through Playwright; Playwright's own browsers are never
downloaded. Screenshots go to ``$REASONLOOP_SCREENSHOTS`` (default: a ``webui-screenshots``
folder in the system's temporary directory).
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from tests.environment import is_outside_setting
from tests.runs.helpers import free_port

REASONLOOP = str(Path(sys.executable).with_name("reasonloop"))
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
REPO = Path(__file__).resolve().parents[2]
EXPECT_TIMEOUT_MS = 15_000
"""How long an expectation waits for the page: the machines running the tests are often loaded."""


def screenshot_dir() -> Path:
    folder = Path(os.environ.get("REASONLOOP_SCREENSHOTS") or Path(tempfile.gettempdir()) / "webui-screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def react_step(tool: str, value: dict[str, Any], thought: str) -> str:
    return f"Thought: {thought}\nAction: {tool}\nAction Input: {json.dumps(value)}"


def write_config(
    root: Path, port: int, scenarios: dict[str, Any], api_keys: list[dict[str, str]] | None = None
) -> Path:
    (root / "scenarios.json").write_text(json.dumps(scenarios, ensure_ascii=False), encoding="utf-8")
    keys = "".join(
        f'\n[[server.api_keys]]\nsha256 = "{k["sha256"]}"\ntenant = "{k["tenant"]}"\n' for k in api_keys or []
    )
    config = f"""
log_level = "warning"

[llm]
provider = "question_script"
model = "{root / "scenarios.json"}"
max_retries = 0

[kb]
path = "{root / "kb"}"

[runs]
sqlite_path = "{root / "runs.sqlite"}"

[server]
host = "127.0.0.1"
port = {port}
max_upload_bytes = 20000
{keys}
[plugins.paths]
llm = ["tests.webui.scripted:QuestionScript"]
tool = ["tests.webui.scripted:SlowLookup", "tests.webui.scripted:StuckLookup"]
reasoning = ["tests.webui.scripted:QuoteSentence"]

[agents.planner]
description = "Plans lookups and runs them in parallel"
reasoning = "rewoo"
tools = ["slow_lookup"]
kb = false

[agents.stuck]
description = "Looks words up in a dictionary that hangs"
reasoning = "rewoo"
tools = ["stuck_lookup"]
kb = false
settings = {{ replan = false }}

[agents.splitter]
description = "Splits a question, with no documents to search"
reasoning = "decompose"
kb = false

[agents.researcher]
description = "Searches the documents"
reasoning = "react"

[agents.writer]
description = "Writes with a researcher's help"
reasoning = "toolcall"
tools = ["agent:researcher"]
kb = false
"""
    path = root / "reasonloop.toml"
    path.write_text(config, encoding="utf-8")
    return path


class Server:
    """``reasonloop serve`` in a subprocess, working in ``root`` (which holds its config)."""

    def __init__(self, root: Path, scenarios: dict[str, Any], api_keys: list[dict[str, str]] | None = None) -> None:
        self.root = root
        self.port = free_port()
        self.config = write_config(root, self.port, scenarios, api_keys)
        self.url = ""
        self.proc: subprocess.Popen[str] | None = None
        self.reader: threading.Thread | None = None
        self.lines: queue.Queue[str] = queue.Queue()
        self.log: list[str] = []

    def start(self, timeout: float = 60) -> str:
        env = {k: v for k, v in os.environ.items() if not is_outside_setting(k)}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
        env.setdefault("OPENBLAS_NUM_THREADS", "1")
        self.proc = subprocess.Popen(
            [REASONLOOP, "--config", str(self.config), "serve"],
            cwd=self.root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.reader = threading.Thread(target=self._read, args=(self.proc,), daemon=True)
        self.reader.start()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                if self.proc.poll() is not None:
                    raise RuntimeError("reasonloop serve exited:\n" + "".join(self.log)) from None
                continue
            self.log.append(line)
            found = re.search(r"serving on (http://\S+)", line)
            if found:
                self.url = found.group(1)
                return self.url
        raise RuntimeError("reasonloop serve did not start:\n" + "".join(self.log))

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            self.lines.put(line)

    def stop(self, *, kill: bool = False) -> None:
        """Stop the server (``kill``: at once, as a crash would, leaving its runs to recovery)."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.kill() if kill else self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.reader is not None:
            self.reader.join(timeout=15)
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def ingest(self, files: dict[str, str | bytes], key: str | None = None) -> None:
        """Upload each file (text, or the bytes of a PDF)."""
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        with httpx.Client(base_url=self.url, timeout=120, headers=headers) as http:
            for name, content in files.items():
                kind = "application/pdf" if name.endswith(".pdf") else "text/plain"
                data = content.encode() if isinstance(content, str) else content
                r = http.post("/v1/kb/documents", files={"files": (name, data, kind)})
                r.raise_for_status()


def launch_browser(playwright: Any) -> Any:
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
