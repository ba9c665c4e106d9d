"""Benchmarks that read ../shared/data say in one line that it is missing, and exit non-zero."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.benchmarks.loading import BENCHMARKS

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("script", ["retrieval.py", "prompt_growth.py", "milvus_index.py"])
def test_missing_data_is_one_line_not_a_traceback(script, tmp_path):
    missing = tmp_path / "no-data"
    proc = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--quick", "--data", str(missing)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "not found" in lines[0] and str(missing) in lines[0]
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_an_unknown_retrieval_set_is_named():
    proc = subprocess.run(
        [sys.executable, str(BENCHMARKS / "retrieval.py"), "--only", "scifact,nosuchset"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines() == [
        "retrieval.py: unknown set nosuchset (--only takes scifact, cmrc2018, hotpotqa)"
    ]
