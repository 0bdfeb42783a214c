#!/usr/bin/env bash
# Install everything the tests need and run them (this is README command 2; .ci/run calls it).
# Integration tests start the real CPU vLLM and, where a Docker engine can be started, containers.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh --test
# A real Docker engine for the docker-runtime tests. Where one starts, its tests must pass
# (BYOG_REQUIRE_DOCKER turns their skip into a failure); where none can, they are skipped.
if bash scripts/start-dockerd.sh; then
  export BYOG_REQUIRE_DOCKER=1
else
  echo "no Docker engine could be started: the docker tests will be skipped"
fi
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
exec "${PYTHON:-python3}" -m pytest -ra -q "$@" tests
