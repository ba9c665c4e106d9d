"""Process settings for serving: applied in a child process, never to the test runner's own."""

from __future__ import annotations

import subprocess
import sys

from reasonloop.server.process import SERVING_GC_THRESHOLDS


def test_tune_for_serving_freezes_start_up_objects_and_spaces_out_collections():
    code = (
        "import gc; import reasonloop.server.app\n"
        "from reasonloop.server.process import tune_for_serving\n"
        "before = gc.get_freeze_count()\n"
        "tune_for_serving()\n"
        "print(before, gc.get_freeze_count(), *gc.get_threshold())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    before, frozen, *thresholds = (int(x) for x in out.stdout.split())
    assert before == 0 and frozen > 10_000  # the imported modules' objects, at least
    assert tuple(thresholds) == SERVING_GC_THRESHOLDS
