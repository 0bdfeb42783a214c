#!/usr/bin/env bash
# Install everything the tests need and run them (this is README command 2; .ci/run calls it).
# Installs into the same virtual environment as install.sh (scripts/venv.sh) and runs the tests
# from it, activated or not. Integration tests start the real CPU vLLM and, where a Docker engine
# can be started, containers.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh
bash scripts/install.sh --test
venv=$(byog_venv)
# What activation would do: the venv's python, byog and lint-imports come first on PATH.
export PATH="$venv/bin:$PATH"
# A real Docker engine for the docker-runtime tests. Where one starts, its tests must pass
# (BYOG_REQUIRE_DOCKER turns their skip into a failure); where none can, they are skipped.
if bash scripts/start-dockerd.sh; then
  export BYOG_REQUIRE_DOCKER=1
else
  echo "no Docker engine could be started: the docker tests will be skipped"
fi
# OpenSSH for the ssh node runtime's tests: each starts its own sshd on 127.0.0.1 (tests/support/sshd.py).
if [ -x /usr/sbin/sshd ] || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server openssh-client >/dev/null; }; then
  export BYOG_REQUIRE_SSH=1
else
  echo "openssh-server could not be installed: the ssh node runtime's tests will be skipped"
fi
# cmark-gfm: markdown as GitHub renders it (tests/support/cmark.py); where it installs, a missing one fails those tests.
if command -v cmark-gfm >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmark-gfm >/dev/null; }; then
  export BYOG_REQUIRE_CMARK=1
else
  echo "cmark-gfm could not be installed: the rendered-markdown tests will be skipped"
fi
# mermaid-cli (npm) in Debian's Chromium: the report's Mermaid charts drawn for real (tests/support/mermaid.py).
# About 80 s from scratch (chromium 32 s, npm 44 s); puppeteer downloads no browser of its own.
if { command -v mmdc >/dev/null && [ -x /usr/bin/chromium ]; } || {
  apt-get update -qq &&
    { command -v npm >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; } &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null &&
    PUPPETEER_SKIP_DOWNLOAD=1 npm install -g --no-audit --no-fund --loglevel=error "@mermaid-js/mermaid-cli@11.17.0" >/dev/null
}; then
  export BYOG_REQUIRE_MERMAID=1
else
  echo "mermaid-cli or chromium could not be installed: the Mermaid render tests will be skipped"
fi
# Slurm (Debian's slurm-wlm) and munge for the slurm runtime's tests: they start their own cluster
# (munged, slurmctld, three slurmd on this host) in a temporary directory (tests/support/slurm.py).
if { [ -x /usr/sbin/slurmctld ] && [ -x /usr/sbin/munged ]; } || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null; }; then
  export BYOG_REQUIRE_SLURM=1
else
  echo "slurm-wlm and munge could not be installed: the slurm runtime's tests will be skipped"
fi
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
# The layers of docs/architecture.md (pyproject.toml's [tool.importlinter]): an import against them fails the build.
echo "checking the import layers (lint-imports)"
"$venv/bin/lint-imports"
# Style and types, as configured in pyproject.toml ([tool.ruff], [tool.mypy]): any finding fails the build.
echo "checking style (ruff check, ruff format --check) and types (mypy)"
"$venv/bin/ruff" check byog tests benchmarks
"$venv/bin/ruff" format --check byog tests benchmarks
"$venv/bin/mypy" byog
exec "$venv/bin/python" -m pytest -ra -q --durations=30 "$@" tests
