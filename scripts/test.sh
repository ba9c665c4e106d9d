#!/usr/bin/env bash
# Set up and run the whole test suite: lint, format check, then both lanes of tests (tests/lanes.py):
# the unit lane (in process; about a minute in two processes), then the integration lane (processes,
# servers, Redis, Chromium, the real models; the real-model tests included).
#
#   bash scripts/test.sh                   # everything
#   bash scripts/test.sh tests/llm         # extra arguments go to pytest, in each lane
#   LANES=unit bash scripts/test.sh        # one lane only (the inner loop: or `pytest -m unit`)
#
# Needs redis-server, openssl and chromium (installed with apt-get when this user can, or asked for).
# First run: creates .venv and installs the project with its dev and local extras
# (llama-cpp-python compiles from source, about 8-15 minutes on 2 cores; pip caches the wheel).
# Later runs reinstall only when pyproject.toml changed, so they start testing at once.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/_install.sh
. scripts/_install.sh
PYTHON="${PYTHON:-python3}"
VENV="${VENV:-.venv}"

# The tests start their own redis-server on loopback ports, and make a TLS certificate with openssl.
rl_require_tools "the Redis run store tests" redis-server=redis-server
rl_require_tools "the TLS test of the http_request tool" openssl=openssl
rl_require_tools "the web UI's browser tests" chromium=chromium

if [ ! -x "$VENV/bin/python" ]; then
    echo "== creating $VENV"
    "$PYTHON" -m venv "$VENV"
fi

stamp="$VENV/.reasonloop-installed"
wanted="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$wanted" ] || ! "$VENV/bin/python" -c "import reasonloop" 2>/dev/null; then
    rl_install_project "$VENV" dev,local
    echo "$wanted" >"$stamp"
fi
[ "${SETUP_ONLY:-0}" = 1 ] && exit 0  # .ci/run sets up first, runs the quick benchmarks, then the tests

# shellcheck disable=SC1091
. "$VENV/bin/activate"
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"

echo "== ruff check"
ruff check .
echo "== ruff format --check"
ruff format --check .
# The unit lane in two processes when pytest-xdist is installed (each test file whole in one of them;
# UNIT_WORKERS=0 for one process): on two cores that halves its time (benchmarks/README.md, "Tests").
unit_workers=()
if [ "${UNIT_WORKERS:-2}" != 0 ] && python -c "import xdist" 2>/dev/null; then
    unit_workers=(-n "${UNIT_WORKERS:-2}" --dist loadfile)
fi
status=0
collected=0
for lane in ${LANES:-unit integration}; do
    echo "== pytest -m $lane"
    started=$SECONDS
    code=0
    if [ "$lane" = unit ]; then
        python -m pytest -q -m "$lane" ${unit_workers[@]+"${unit_workers[@]}"} "$@" || code=$?
    else
        python -m pytest -q -m "$lane" "$@" || code=$?
    fi
    echo "== the $lane lane took $((SECONDS - started)) s (exit code $code)"
    case "$code" in
        0) collected=1 ;;
        5) ;;  # nothing of this lane among the tests named: the other lane may have them
        *) collected=1; [ "$status" -ne 0 ] || status=$code ;;
    esac
done
if [ "$collected" -eq 0 ]; then
    echo "pytest collected no tests: the suite is broken, not green" >&2
    exit 5
fi
exit "$status"
