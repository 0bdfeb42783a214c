#!/usr/bin/env bash
# Install everything the tests need and run them (this is README command 2; .ci/run calls it).
# Integration tests start the real CPU vLLM and, where a Docker engine can be started, containers.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh --test
if [ -f scripts/start-dockerd.sh ]; then
  bash scripts/start-dockerd.sh || echo "no Docker engine: docker tests will be skipped"
fi
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
exec "${PYTHON:-python3}" -m pytest -ra -q "$@" tests
