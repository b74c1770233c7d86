#!/bin/sh
# scripts/pytest.sh BUILD — the Python API's tests (python/tests), run by `make check` after the
# Criterion tests, with Debian's Python (`python3` on PATH may be another one, without NumPy).
# REPRISE_BIN, REPRISE_BUILD and REPRISE_SRC come from make check's environment; without them
# the tests use BUILD. Exit 4 when Python, pytest, NumPy or pandas is missing (scripts/deps.sh
# test installs python3-pytest, python3-numpy and python3-pandas).
set -eu
build=${1:-build/default}
py=${PYTHON:-/usr/bin/python3}
if ! "$py" -c 'import pytest, numpy, pandas' 2>/dev/null; then
    echo "pytest.sh: $py cannot import pytest, numpy and pandas; as root: scripts/deps.sh test" >&2
    exit 4
fi
export REPRISE_BUILD="${REPRISE_BUILD:-$build}" PYTHONDONTWRITEBYTECODE=1
exec "$py" -m pytest -q -p no:cacheprovider python/tests
