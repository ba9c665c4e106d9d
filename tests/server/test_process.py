"""Process settings for serving: applied in a child process, never to the test runner's own."""

from __future__ import annotations

import resource
import subprocess
import sys

import pytest

from reasonloop.server.transport.process import SERVING_GC_THRESHOLDS

pytestmark = pytest.mark.integration


def test_tune_for_serving_freezes_start_up_objects_and_spaces_out_collections():
    code = (
        "import gc; import reasonloop.server.app\n"
        "from reasonloop.server.transport.process import tune_for_serving\n"
        "before = gc.get_freeze_count()\n"
        "tune_for_serving()\n"
        "print(before, gc.get_freeze_count(), *gc.get_threshold())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    before, frozen, *thresholds = (int(x) for x in out.stdout.split())
    assert before == 0 and frozen > 10_000  # the imported modules' objects, at least
    assert tuple(thresholds) == SERVING_GC_THRESHOLDS


_READS_PROC = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the descriptor table from /proc")


def _in_child(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    return out.stdout.split()


@_READS_PROC
def test_serving_makes_room_for_its_sockets_at_start_without_touching_open_descriptors():
    code = (
        "import os, resource\n"
        "from reasonloop.server.transport.process import reserve_descriptors\n"
        "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))\n"  # a desktop's low soft limit
        "kept = os.open(os.devnull, os.O_RDONLY)\n"
        "os.dup2(kept, 255)\n"  # a descriptor where the table's growth reaches
        "before = os.fstat(255).st_ino\n"
        "room = reserve_descriptors(4096)\n"
        "table = int(open('/proc/self/status').read().split('FDSize:')[1].split()[0])\n"
        "print(room, resource.getrlimit(resource.RLIMIT_NOFILE)[0], table, os.fstat(255).st_ino == before, hard)\n"
    )
    room, soft, table, untouched, hard = _in_child(code)
    expected = min(4096, int(hard)) if hard != str(resource.RLIM_INFINITY) else 4096
    assert int(room) == int(soft) == expected  # the soft limit raised towards the hard one
    assert int(table) >= expected  # grown now: accepting sockets later never grows it
    assert untouched == "True"


@_READS_PROC
def test_the_table_is_grown_only_up_to_the_limit_an_administrator_set():
    code = (
        "import resource\n"
        "from reasonloop.server.transport.process import reserve_descriptors\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (300, 300))\n"
        "print(reserve_descriptors(65536), *resource.getrlimit(resource.RLIMIT_NOFILE))\n"
    )
    assert _in_child(code) == ["300", "300", "300"]


def test_limits_above_what_serving_needs_are_left_as_they_are():
    code = (
        "import resource\n"
        "from reasonloop.server.transport.process import reserve_descriptors\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (5000, 5000))\n"
        "print(reserve_descriptors(4096), *resource.getrlimit(resource.RLIMIT_NOFILE))\n"
    )
    assert _in_child(code) == ["4096", "5000", "5000"]  # never lowered: the process may not raise them back
