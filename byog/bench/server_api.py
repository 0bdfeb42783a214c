"""Two small reads and one write of a vLLM server's own routes, shared by the sweep and the fingerprint
(which the GPU probe imports without the sweep's dependencies)."""

from __future__ import annotations

import httpx


def get_text(url: str, timeout_s: float = 30.0) -> str | None:
    """The body of a GET that answered 200; None otherwise."""
    try:
        response = httpx.get(url, timeout=timeout_s)
        return response.text if response.status_code == 200 else None
    except httpx.HTTPError:
        return None


def metrics_text(base_url: str) -> str | None:
    """The server's Prometheus /metrics, verbatim."""
    return get_text(f"{base_url}/metrics")


def reset_prefix_cache(base_url: str) -> bool:
    """vLLM serves POST /reset_prefix_cache only in dev mode (VLLM_SERVER_DEV_MODE=1); False = refused."""
    try:
        return httpx.post(f"{base_url}/reset_prefix_cache", timeout=60.0).status_code == 200
    except httpx.HTTPError:
        return False
