#!/usr/bin/env bash
# The GPU user's install (docs/install.md, "Beside CUDA vLLM"), checked on the lent H200.
#
# That machine has no package registry: vLLM and byog's dependencies arrive as carried files
# (the GPU routine unpacks vLLM into /tmp/site and the extra wheels into /tmp/site2). This script
# then installs byog from the carried checkout into the interpreter that runs vLLM, with
# --no-index --no-deps (every dependency must already be there; nothing of vLLM's is touched),
# names any requirement of byog[evals,report,nvml] that is absent or of the wrong version, and
# runs the installed `byog` from outside the checkout. Transcript: $OUT/install-check.txt.
#
#   benchmarks/gpu/install-check.sh        (from the checkout root, after the GPU routine's setup)
#
# BYOG_GPU_SITE: the folders that hold vLLM and the carried wheels (default /tmp/site:/tmp/site2).
set -uo pipefail
out=${OUT:-/tmp}/install-check.txt
exec > >(tee "$out") 2>&1
export PYTHONPATH=${BYOG_GPU_SITE:-/tmp/site:/tmp/site2} HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
checkout=$PWD
echo "$(date -u +%FT%TZ) python3: $(command -v python3) ($(python3 -V 2>&1)); PYTHONPATH=$PYTHONPATH"
python3 -c 'import vllm, torch; print("vllm", vllm.__version__, "| torch", torch.__version__, "| cuda", torch.cuda.is_available())'
python3 -c 'import setuptools; print("setuptools", setuptools.__version__, "(the editable build needs it: --no-build-isolation)")'

echo "$ python3 -m pip install --no-deps --no-index --no-build-isolation -e ."
t0=$(date +%s)
python3 -m pip install --no-deps --no-index --no-build-isolation --disable-pip-version-check -e . || exit 1
echo "installed in $(( $(date +%s) - t0 )) s"

echo "$ requirements of byog[evals,report,nvml] present?"
python3 - <<'PY'
import importlib.metadata as md
try:
    from packaging.requirements import Requirement
except ImportError:
    from pip._vendor.packaging.requirements import Requirement
wanted = ["", "evals", "report", "nvml"]
bad = []
for raw in md.requires("byog") or []:
    req = Requirement(raw)
    if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in wanted):
        continue
    try:
        found = md.version(req.name)
    except md.PackageNotFoundError:
        bad.append(f"{req} (absent)")
        continue
    print(f"  {req}: {found}")
    if not req.specifier.contains(found, prereleases=True):
        bad.append(f"{req} (found {found})")
print("all present" if not bad else "NOT SATISFIED: " + "; ".join(bad))
PY
python3 -c 'import lm_eval, scipy, matplotlib, pynvml, tiktoken, datasets; print("imports ok: lm_eval, scipy, matplotlib, pynvml, tiktoken, datasets")'

bin=$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')
cd /tmp  # the installed byog, not the checkout on sys.path
echo "$ $bin/byog version"
"$bin/byog" version
python3 -c "import byog; print('byog from', byog.__file__)"
echo "$ $bin/byog --help | head -n 30"
"$bin/byog" --help | head -n 30
echo "(the editable install points at $checkout: a later call that carries the checkout elsewhere needs it again)"
