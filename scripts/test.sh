#!/usr/bin/env bash
# Install everything the tests need and run them (this is README command 2; .ci/run calls it).
# Installs into the same virtual environment as install.sh (scripts/venv.sh) and runs the tests
# from it, activated or not. Integration tests start the real CPU vLLM and, where a Docker engine
# can be started, containers.
#
#   bash scripts/test.sh [PYTEST ARGS]          # everything CI runs: services, lint, types, all tests
#   bash scripts/test.sh --unit [PYTEST ARGS]   # tests/unit alone: no services, no vLLM start, minutes
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh
# One pytest run; PYTEST ARGS go to every run, and one that they leave with no test (exit 5) is not a failure.
tested=0
run_pytest() { "$(byog_venv)/bin/python" -m pytest -ra -q "$@" || { code=$?; [ "$code" = 5 ] || tested=$code; }; }
# The unit suite on every core, a module per worker (pytest-xdist), but for the modules that time a
# fake server (marker "serial"), which run alone after it.
UNIT_PARALLEL=(-n auto --dist loadfile -m "not serial")
unit_serial() { run_pytest -m serial "$@" tests/unit; }
if [ "${1:-}" = "--unit" ]; then
  shift
  venv=$(byog_venv)
  # A developer's loop: install once (install.sh --test where the venv lacks byog's test extras), then
  # only pytest. A service or tool that is not there skips its tests (no BYOG_REQUIRE_*).
  [ -x "$venv/bin/byog" ] && "$venv/bin/python" -c 'import pytest_timeout, importlinter, xdist' 2>/dev/null \
    || bash scripts/install.sh --test
  export PATH="$venv/bin:$PATH" HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
  run_pytest "${UNIT_PARALLEL[@]}" --durations=30 "$@" tests/unit
  unit_serial --durations=30 "$@"
  exit "$tested"
fi
# The services the tests use (Docker, sshd, cmark-gfm, mermaid-cli, Slurm) install from apt while
# pip installs byog; their log is shown once both are done. The checks that need only byog's venv
# (import layers, style, types) run as soon as pip is done, while apt may still be installing.
services_log=$(mktemp) services_env=$(mktemp) mypy_log=$(mktemp) results=$(mktemp -d)
trap 'rm -rf "$services_log" "$services_env" "$mypy_log" "$results"' EXIT
bash scripts/test-services.sh "$services_env" >"$services_log" 2>&1 &
services=$!
installed=0
bash scripts/install.sh --test || installed=$?
[ "$installed" = 0 ] || { wait "$services" || true; cat "$services_log"; exit "$installed"; }
venv=$(byog_venv)
# What activation would do: the venv's python, byog and lint-imports come first on PATH.
export PATH="$venv/bin:$PATH"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
# The layers of docs/architecture.md (pyproject.toml's [tool.importlinter]): an import against them fails the build.
echo "checking the import layers (lint-imports)"
"$venv/bin/lint-imports"
# Style and types, as configured in pyproject.toml ([tool.ruff], [tool.mypy]): any finding fails the build.
echo "checking style (ruff check, ruff format --check)"
"$venv/bin/ruff" check byog tests benchmarks
"$venv/bin/ruff" format --check byog tests benchmarks
# mypy takes a minute or more from a cold cache: it starts now, beside the rest of apt and then the
# tests, niced so the timing tests keep the cores, and its verdict comes last.
echo "checking types (mypy), beside the tests"
nice -n 19 "$venv/bin/mypy" byog >"$mypy_log" 2>&1 &
mypy=$!
wait "$services" || true
cat "$services_log"
. "$services_env"
# The docker tests' image starts from a debootstrapped root filesystem (about a minute): it is made
# now, beside the first integration tests, which need no Docker; the image build waits for it
# (byog.images.context.rootfs_tarball takes turns) and reuses it. A failure here shows again there.
if [ "${BYOG_REQUIRE_DOCKER:-}" = 1 ]; then
  nice -n 10 "$venv/bin/python" -c 'from byog.images.context import rootfs_tarball, source_root; rootfs_tarball(source_root(), print)' \
    >"$results/rootfs.log" 2>&1 &
fi
# The integration tests one after another (each starts real servers and reads their timing). Beside
# them, niced, the unit suite's parallel part and then the integration modules that time nothing
# (marker "beside"): a CPU vLLM server binds its compute to one core and a test waits on starts, Slurm
# and Docker, so the integration tests leave about half the box idle (`byog run smoke-spec` used 0.82
# of a core out of two). What runs beside is shown when both are done. The serial part times a fake
# server and runs alone after both. The 30 slowest tests of the runs are printed at the end of every
# run, where CI time goes.
(
  renice -n 10 -p "$BASHPID" >/dev/null
  run_pytest "${UNIT_PARALLEL[@]}" --junitxml="$results/unit.xml" "$@" tests/unit
  run_pytest -m beside --junitxml="$results/beside.xml" "$@" tests/integration
  echo "$tested" >"$results/beside.rc"
) >"$results/beside.log" 2>&1 &
beside=$!
run_pytest -m "not beside" --junitxml="$results/integration.xml" "$@" tests/integration
wait "$beside" || true
cat "$results/beside.log"
beside_code=$(cat "$results/beside.rc" 2>/dev/null || echo 1)
[ "$beside_code" = 0 ] || tested=$beside_code
unit_serial --junitxml="$results/serial.xml" "$@"
"$venv/bin/python" scripts/slowest_tests.py 30 "$results"/*.xml
typed=0
wait "$mypy" || typed=$?
echo "mypy: $(tail -n 1 "$mypy_log")"
[ "$typed" = 0 ] || { cat "$mypy_log"; echo "mypy found type errors: the build fails"; }
[ "$tested" = 0 ] && [ "$typed" = 0 ]
