"""``reasonloop serve`` as a person runs it: where it listens, which knowledge base, a request log, and its end."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from reasonloop.cli import main
from tests.environment import is_outside_setting
from tests.runs.helpers import free_port
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

REASONLOOP = str(Path(sys.executable).with_name("reasonloop"))


class Served:
    """A ``reasonloop serve`` subprocess whose stderr lines are read as they come."""

    def __init__(self, *args: str, cwd: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not is_outside_setting(k)}
        self.proc = subprocess.Popen(
            [REASONLOOP, "serve", *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.err: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.put(line)

    def wait_for(self, text: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                assert self.proc.poll() is None, "".join(self.err)
                continue
            self.err.append(line)
            if text in line:
                return line
        raise AssertionError(f"{text!r} never came: {''.join(self.err)}")

    def stop(self) -> tuple[int, str, str]:
        """Ctrl-C, then everything it printed (stderr is read by this object's thread alone)."""
        self.proc.send_signal(signal.SIGINT)
        assert self.proc.stdout is not None
        out = self.proc.stdout.read()
        self.proc.stdout.close()
        self.proc.wait(timeout=30)
        self.reader.join(timeout=30)
        assert self.proc.stderr is not None
        self.proc.stderr.close()
        while not self.lines.empty():
            self.err.append(self.lines.get())
        return self.proc.returncode, out, "".join(self.err)


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """A knowledge base outside the working directory, with one document in it."""
    for name in list(os.environ):
        if is_outside_setting(name):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "note.md").write_text("# Note\n\nThe pump goes before the filter.", encoding="utf-8")
    kb = tmp_path / "other-kb"
    try:
        main(["ingest", str(tmp_path / "note.md"), "--kb", str(kb)])
    except SystemExit as exc:
        assert not exc.code
    return kb


def test_serve_says_where_it_listens_serves_the_kb_it_is_given_and_says_when_it_stops(elsewhere, tmp_path):
    port = free_port()
    served = Served("--port", str(port), "--kb", str(elsewhere), "--access-log", cwd=tmp_path)
    line = served.wait_for("serving on")
    assert f"http://127.0.0.1:{port}" in line
    details = served.wait_for("API docs")
    assert f"http://127.0.0.1:{port}/docs" in details and f"ws://127.0.0.1:{port}/v1/ws" in details
    assert str(elsewhere) in details

    stats = httpx.get(f"http://127.0.0.1:{port}/v1/kb/stats", timeout=30).json()
    assert stats["documents"] == 1  # the --kb one, not ./.reasonloop
    assert not (tmp_path / ".reasonloop").exists()

    code, out, err = served.stop()
    assert code == 0, err
    assert f"stopped serving on http://127.0.0.1:{port}" in err
    assert '"GET /v1/kb/stats HTTP/1.1" 200' in out  # the request log


def test_serve_logs_no_requests_unless_asked_and_fails_in_one_line_on_a_taken_port(tmp_path):
    port = free_port()
    served = Served("--port", str(port), cwd=tmp_path)
    served.wait_for("serving on")
    assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).status_code == 200

    second = subprocess.run(
        [REASONLOOP, "serve", "--port", str(port)], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert second.returncode == 1
    assert "serving on" not in second.stderr and "address already in use" in second.stderr.lower()

    code, out, err = served.stop()
    assert code == 0 and "stopped serving" in err
    assert "GET /healthz" not in out


def test_serve_open_points_the_browser_at_the_web_ui(tmp_path, monkeypatch):
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf %s "$1" > {opened}\n', encoding="utf-8")
    browser.chmod(0o755)
    monkeypatch.setenv("BROWSER", str(browser))  # webbrowser runs $BROWSER with the URL
    port = free_port()
    served = Served("--port", str(port), "--open", cwd=tmp_path)
    assert f"web UI http://127.0.0.1:{port}/ " in served.wait_for("web UI")
    url = wait_until(lambda: opened.exists() and opened.read_text(), what="the browser given the page")
    assert url == f"http://127.0.0.1:{port}/"
    page = httpx.get(url, timeout=10)
    assert page.status_code == 200 and 'src="ui/app.js"' in page.text
    code, _, err = served.stop()
    assert code == 0, err
