#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image (the bundle is unpacked in
# /autograder/source). It installs python3 (>= 3.11), gcc, valgrind and bubblewrap from the distribution,
# then pagedcheck from this bundle (the wheel built with it) with the exact Python packages it was built
# with (requirements.txt), in a virtual environment of its own: /autograder/pagedcheck-venv.
#   PAGEDCHECK_AUTOGRADER_ROOT  the tree's root (default /autograder); `pagedcheck gradescope-run` moves it
#   PAGEDCHECK_SKIP_APT=1       no apt-get (the simulation, on a machine that has the tools already)
set -euo pipefail
ROOT="${PAGEDCHECK_AUTOGRADER_ROOT:-/autograder}"
SOURCE="$ROOT/source"
VENV="$ROOT/pagedcheck-venv"
SKIP_APT="${PAGEDCHECK_SKIP_APT:-0}"

if [ "$SKIP_APT" != 1 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y --no-install-recommends python3 python3-venv gcc libc6-dev valgrind bubblewrap
fi

new_enough() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; }
PYTHON=""
for candidate in python3 python3.13 python3.12 python3.11; do
    if command -v "$candidate" >/dev/null && new_enough "$candidate"; then
        PYTHON="$(command -v "$candidate")"
        break
    fi
done
if [ -z "$PYTHON" ] && [ "$SKIP_APT" != 1 ]; then
    apt-get install -y --no-install-recommends python3.11 python3.11-venv  # e.g. Ubuntu 22.04: python3 is 3.10
    PYTHON="$(command -v python3.11)"
fi
if [ -z "$PYTHON" ]; then
    echo "setup.sh: no python >= 3.11 on PATH" >&2
    exit 1
fi
for tool in gcc valgrind bwrap; do
    command -v "$tool" >/dev/null || echo "setup.sh: warning: $tool is not installed" >&2
done

rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --no-input --quiet -r "$SOURCE/requirements.txt" "$SOURCE"/pagedcheck-*.whl
"$VENV/bin/pagedcheck" --version
