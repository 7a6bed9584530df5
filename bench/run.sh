#!/usr/bin/env bash
# Install what the benchmark needs, then run it:
#   bench/run.sh [--quick] [--out FILE]
# Falcon goes into the project's .venv; wrk comes from Debian's packages
# where it can be installed (as root, with apt), and otherwise the benchmark
# falls back to a Python load generator and says so in its output.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q -e . 'falcon>=4'
if ! command -v wrk >/dev/null && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    apt-get install -y -q wrk >/dev/null 2>&1 || (apt-get update -q >/dev/null && apt-get install -y -q wrk >/dev/null) || true
fi
exec .venv/bin/python bench/run.py "$@"
