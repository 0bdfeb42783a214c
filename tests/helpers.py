"""Small test utilities shared across test modules."""

from __future__ import annotations

import psutil


def vllm_processes() -> list[psutil.Process]:
    """Live processes running vLLM's server (ours are launched through byog.images.vllm_entry, or in a
    server's own Python through vLLM's entry point, vllm.entrypoints.cli.main)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = " ".join(proc.info.get("cmdline") or [])
        if proc.info.get("status") == psutil.STATUS_ZOMBIE:
            continue
        ours = "byog.images.vllm_entry" in cmdline or "vllm.entrypoints.cli.main" in cmdline
        if ours and " serve " in f" {cmdline} ":
            found.append(proc)
    return found
