#!/usr/bin/env bash
# Create .venv with everything tltyped needs to build, demo and test (idempotent).
# torch is pinned to the CPU wheel that these machines serve from local disk;
# an unpinned torch would pull a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=.venv/.tltyped-setup
want="torch==2.13.0 $(sha256sum pyproject.toml | cut -c1-16)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then exit 0; fi
python3 -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check torch==2.13.0
.venv/bin/pip install -q --disable-pip-version-check -e ".[test]"
echo "$want" > "$stamp"
