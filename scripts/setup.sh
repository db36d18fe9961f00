#!/usr/bin/env bash
# Create .venv with everything tltyped needs to build, demo and test (idempotent).
# torch is pinned to the CPU wheel that these machines serve from local disk;
# an unpinned torch would pull a multi-GB CUDA build.
#
# The checkout is installed editable in setuptools' compat mode: a .pth file
# holding the checkout's path, which mypy and pyright read (the default mode's
# import hook is invisible to them). A second .pth puts stubs/ on the path, so
# that both checkers read its `tilelang.language` stubs with no configuration.
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=.venv/.tltyped-setup
want="torch==2.13.0 $(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then exit 0; fi
python3 -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check torch==2.13.0
.venv/bin/pip install -q --disable-pip-version-check -e ".[test]" --config-settings editable_mode=compat
site_packages=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
echo "$PWD/stubs" > "$site_packages/tltyped-stubs.pth"
echo "$want" > "$stamp"
