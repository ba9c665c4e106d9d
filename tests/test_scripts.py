"""scripts/_install.sh, shared by scripts/demo.sh and scripts/test.sh: what it says and checks before a long
install, with stand-ins for pip, the compilers and apt-get on a PATH made for each test."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HELPER = ROOT / "scripts" / "_install.sh"
BASICS = ("bash", "sleep", "date", "id", "nproc", "cat")
"""Real commands every PATH here has; anything else a test puts there itself."""

FAKE_PYTHON = """#!/bin/bash
# Stands in for a venv's python: llama_cpp is not importable, pip's cache is what CACHED says, and
# "pip install -e" logs its arguments, then sleeps PIP_S seconds and exits with PIP_STATUS.
case "$*" in
    "-c import llama_cpp") exit 1 ;;
    "-m pip cache list"*) [ -n "${CACHED:-}" ] && echo "$CACHED"; exit 0 ;;
    "-m pip install --quiet --upgrade pip") exit 0 ;;
    "-m pip install"*) echo "pip ran: $* (CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-})"
        sleep "${PIP_S:-0}"; exit "${PIP_STATUS:-0}" ;;
esac
exit 0
"""


def script(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


@pytest.fixture
def sandbox(tmp_path):
    """``(run, bin_dir)``: ``run(code, **env)`` runs bash ``code`` after sourcing the helper, in the repo,
    with ``PATH`` set to ``bin_dir`` only (the basics, plus what the test adds)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in BASICS:
        real = shutil.which(name)
        assert real, name
        (bin_dir / name).symlink_to(real)
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    script(venv / "bin" / "python", FAKE_PYTHON)

    def run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
        full = {"PATH": str(bin_dir), "HOME": str(tmp_path), "VENV": str(venv), **env}
        return subprocess.run(
            [shutil.which("bash") or "bash", "-c", f'set -euo pipefail\n. "{HELPER}"\n{code}'],
            cwd=ROOT,
            env=full,
            capture_output=True,
            text=True,
            timeout=60,
        )

    return run, bin_dir


def add_tools(bin_dir: Path, *names: str) -> None:
    for name in names:
        script(bin_dir / name, "#!/bin/bash\nexit 0\n")


@pytest.mark.integration
def test_a_compile_is_announced_and_a_heartbeat_runs_until_pip_ends(sandbox):
    run, bin_dir = sandbox
    add_tools(bin_dir, "cc", "c++", "make", "cmake")
    proc = run('rl_install_project "$VENV" dev,local\nsleep 2.5\necho after', RL_HEARTBEAT_S="1", PIP_S="3.5")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0].startswith("== installing reasonloop[dev,local] into ")
    announce = "\n".join(out[1:3])
    assert "published as source code only" in announce and "8-15 minutes" in announce
    assert "pip fetches a cmake" not in proc.stdout  # cmake is there
    pip_at = next(i for i, line in enumerate(out) if line.startswith("pip ran: -m pip install --quiet -e .[dev,local]"))
    done_at = out.index("== llama-cpp-python compiled and installed")
    beats = [i for i, line in enumerate(out) if "compiling llama-cpp-python: still working, 0m0" in line]
    assert len(beats) >= 2 and all(pip_at < i < done_at for i in beats), out  # none after pip ended
    assert out[-1] == "after"
    assert f"CMAKE_BUILD_PARALLEL_LEVEL={len(os.sched_getaffinity(0))}" in out[pip_at]


@pytest.mark.integration
def test_a_failed_build_fails_the_install(sandbox):
    run, bin_dir = sandbox
    add_tools(bin_dir, "cc", "c++", "make", "cmake")
    proc = run('rl_install_project "$VENV" local || echo "status $?"', PIP_STATUS="3")
    assert proc.stdout.splitlines()[-1] == "status 3"
    assert "compiled and installed" not in proc.stdout


@pytest.mark.integration
def test_without_a_compiler_it_stops_before_pip_and_says_what_to_install(sandbox):
    run, bin_dir = sandbox
    add_tools(bin_dir, "make")  # no cc, no c++, and no apt-get to fetch them with
    proc = run('rl_install_project "$VENV" local')
    assert proc.returncode == 1
    assert "pip ran: -m pip install --quiet -e" not in proc.stdout
    assert "error: cc c++ not found (needed for compiling llama-cpp-python)" in proc.stderr
    assert "apt-get install -y build-essential" in proc.stderr


@pytest.mark.integration
def test_without_cmake_it_says_pip_brings_one(sandbox):
    run, bin_dir = sandbox
    add_tools(bin_dir, "cc", "c++", "make")
    proc = run('rl_install_project "$VENV" local')
    assert proc.returncode == 0, proc.stderr
    assert "cmake is not installed: pip fetches a cmake package for the build." in proc.stdout


@pytest.mark.integration
@pytest.mark.parametrize(("extras", "cached"), [("dev", ""), ("local", "/cache/llama_cpp_python-0.3.36.whl")])
def test_no_compile_no_announcement(sandbox, extras, cached):
    run, _ = sandbox  # no compiler either: it is not needed
    proc = run(f'rl_install_project "$VENV" {extras}', CACHED=cached, RL_HEARTBEAT_S="1", PIP_S="1.5")
    assert proc.returncode == 0, proc.stderr
    assert f"pip ran: -m pip install --quiet -e .[{extras}]" in proc.stdout
    assert "source code only" not in proc.stdout and "still working" not in proc.stdout


@pytest.mark.integration
def test_a_missing_tool_is_asked_for_when_apt_get_cannot_be_used(sandbox):
    run, _ = sandbox
    proc = run('rl_require_tools "the Redis run store tests" redis-server=redis-server\necho unreachable')
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "error: redis-server not found (needed for the Redis run store tests), and this user cannot run apt-get.",
        "       Install it first, e.g. on Debian/Ubuntu: sudo apt-get install -y redis-server",
    ]


@pytest.mark.integration
def test_a_missing_tool_is_installed_with_apt_get_as_root(sandbox, tmp_path):
    run, bin_dir = sandbox
    log = tmp_path / "apt.log"
    script(bin_dir / "apt-get", f'#!/bin/bash\necho "$*" >>"{log}"\n')
    (bin_dir / "id").unlink()
    script(bin_dir / "id", "#!/bin/bash\necho 0\n")  # root
    add_tools(bin_dir, "openssl")
    proc = run('rl_require_tools "the tests" redis-server=redis-server openssl=openssl\necho next')
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["== apt-get install redis-server (needed for the tests)", "next"]
    assert log.read_text().splitlines() == ["update -qq", "install -y -qq --no-install-recommends redis-server"]


@pytest.mark.parametrize("name", ["test.sh", "demo.sh"])
def test_the_scripts_use_the_helper_for_their_install(name):
    text = (ROOT / "scripts" / name).read_text()
    assert ". scripts/_install.sh" in text and "rl_install_project " in text
    assert "pip install --quiet -e" not in text  # no second, silent install path


@pytest.mark.integration
def test_pytest_lists_the_reason_of_every_skip(tmp_path):
    (tmp_path / "test_skipping.py").write_text(
        "import pytest\n\n@pytest.mark.skip(reason='needs the moon')\ndef test_it():\n    pass\n"
    )
    argv = [sys.executable, "-m", "pytest", "-q", "-c", str(ROOT / "pyproject.toml"), "-p", "no:cacheprovider"]
    proc = subprocess.run(
        [*argv, "--rootdir", str(tmp_path), str(tmp_path / "test_skipping.py")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert any(
        line.startswith("SKIPPED [1] ") and line.endswith("test_skipping.py:3: needs the moon")
        for line in proc.stdout.splitlines()
    ), proc.stdout
