#!/usr/bin/env bash
# The tour: compile the seed kernels, show signatures, keys, CUDA, checks and
# static typing; on a machine with a GPU, also run and verify every kernel.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export TLTYPED_CACHE_DIR="${TLTYPED_CACHE_DIR:-$PWD/.tltyped-cache}" TILELANG_CACHE_DIR="${TILELANG_CACHE_DIR:-$PWD/.tltyped-cache/tilelang}"
exec .venv/bin/python examples/demo.py
