"""The two lanes (tests/lanes.py): each test is in one, and a unit test that uses a real part fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.lanes import MACHINE_LOOKUPS, _program
from tests.waiting import await_until, wait_until

ROOT = Path(__file__).resolve().parents[1]

SAMPLE = """
import subprocess
import sys

import pytest
import uvicorn


def test_plain():
    pass


@pytest.mark.redis
def test_needs_redis():
    pass


def test_asks_for_redis_server(redis_server):
    pass


def test_starts_a_process_unmarked():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_serves_unmarked():
    uvicorn.Server(uvicorn.Config(app=None))


@pytest.mark.integration
def test_starts_a_process_marked():
    subprocess.run([sys.executable, "-c", "pass"], check=True)
"""

CONFTEST = """
import pytest

from tests.conftest import pytest_collection_modifyitems  # noqa: F401
from tests.lanes import guard_unit_test  # noqa: F401


@pytest.fixture
def redis_server():
    return None
"""


def run_pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "pytest", "-q", "-c", str(ROOT / "pyproject.toml"), "-p", "no:cacheprovider"]
    argv += ["-p", "no:randomly", "--rootdir", str(folder), *args]
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    return subprocess.run([*argv, str(folder)], capture_output=True, text=True, timeout=120, cwd=folder, env=env)


@pytest.mark.integration
def test_each_test_is_in_one_lane_and_a_unit_test_may_not_start_a_real_part(tmp_path):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    unit = run_pytest(tmp_path, "--collect-only", "-m", "unit")
    integration = run_pytest(tmp_path, "--collect-only", "-m", "integration")
    assert {line.split("::")[1] for line in unit.stdout.splitlines() if "::" in line} == {
        "test_plain",
        "test_starts_a_process_unmarked",
        "test_serves_unmarked",
    }, unit.stdout + unit.stderr
    assert {line.split("::")[1] for line in integration.stdout.splitlines() if "::" in line} == {
        "test_needs_redis",
        "test_asks_for_redis_server",
        "test_starts_a_process_marked",
    }, integration.stdout + integration.stderr

    ran = run_pytest(tmp_path, "-rf")
    summary = " ".join(ran.stdout.split())
    assert "2 failed, 4 passed" in summary, ran.stdout
    assert "FAILED test_sample.py::test_starts_a_process_unmarked" in summary
    assert "FAILED test_sample.py::test_serves_unmarked" in summary
    assert f"Failed: a unit test started a process ({sys.executable}): mark it `integration`" in summary
    assert "Failed: a unit test served on a socket with uvicorn: mark it `integration`" in summary


@pytest.mark.integration
def test_a_misspelt_marker_is_an_error_not_a_test_left_out_of_its_lane(tmp_path):
    (tmp_path / "test_typo.py").write_text("import pytest\n\n@pytest.mark.integraton\ndef test_it():\n    pass\n")
    ran = run_pytest(tmp_path)
    assert ran.returncode != 0 and "'integraton' not found in `markers` configuration option" in ran.stdout


@pytest.mark.parametrize(("argv", "program"), [(["uname", "-p"], "uname"), ("ldconfig -p", "ldconfig"), ([], "")])
def test_the_program_of_a_command_line_is_its_first_word(argv, program):
    assert _program(argv) == program


def test_the_machine_lookups_of_the_standard_library_are_let_through():
    import platform

    platform.uname()  # ``uname -p``, from whichever test asks first
    assert {"uname", "ldconfig"} <= MACHINE_LOOKUPS


def test_wait_until_returns_the_first_true_value_and_fails_naming_what_it_waited_for():
    values = iter([0, None, "", "ready"])
    assert wait_until(lambda: next(values), timeout=5) == "ready"
    with pytest.raises(AssertionError, match=r"not true within 0.05 s: the moon \(last value: False\)"):
        wait_until(lambda: False, timeout=0.05, what="the moon")


async def test_await_until_takes_sync_and_async_predicates():
    calls = []

    async def ready() -> int:
        calls.append(1)
        return len(calls) if len(calls) >= 3 else 0

    assert await await_until(ready, timeout=5) == 3
    assert await await_until(lambda: "now") == "now"
    with pytest.raises(AssertionError, match=r"not true within 0\.05 s"):
        await await_until(lambda: [], timeout=0.05)
