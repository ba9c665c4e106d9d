#!/usr/bin/env sh
# Create the environment holding the peer frameworks for benchmarks/overhead.py.
#
#   benchmarks/peers/setup.sh [VENV_DIR]      (default /work/benchenv)
#
# reasonloop itself is installed editable too, so the whole benchmark can also run from
# that interpreter. Then: python benchmarks/overhead.py --python VENV_DIR/bin/python
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
venv=${1:-/work/benchenv}
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --upgrade pip
"$venv/bin/pip" install --quiet -e "$repo" -r "$here/requirements.txt"
echo "peers installed in $venv; run: python $repo/benchmarks/overhead.py --python $venv/bin/python"
