"""What every runtime does around a server: wait for /health, probe it, write server.json."""

from __future__ import annotations

import datetime
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from byog import __version__
from byog.analysis.server_log import root_cause
from byog.core.argv import arg_value
from byog.core.errors import ByogError
from byog.core.io import atomic_write_json
from byog.schemas.plan import ServerBase
from byog.schemas.server import Endpoint, PreparedModel

HEALTH_POLL_S = 0.5


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def tail_file(path: Path, lines: int = 30) -> str:
    if not path.is_file():
        return "(no log)"
    with path.open("r", encoding="utf-8", errors="replace") as handle:
        return "".join(deque(handle, maxlen=lines)).rstrip()


LOG_READ_BYTES = 4 << 20  # the end of a server.log read for its root cause: a start's lines fit many times


def log_root_cause(path: Path) -> str | None:
    """vLLM's root cause in the last start's lines of a server.log (None: no log or no error line)."""
    if not path.is_file():
        return None
    with path.open("rb") as handle:
        handle.seek(max(0, path.stat().st_size - LOG_READ_BYTES))
        return root_cause(handle.read().decode("utf-8", "replace"))


def wait_for_health(
    base_url: str,
    *,
    name: str,
    alive: Callable[[], bool],
    log_tail: Callable[[], str],
    timeout_s: float,
    log_path: Path | None = None,
) -> float:
    """Poll /health until it answers 200; fail fast with the log tail if the server exits first,
    naming vLLM's root cause (``byog.analysis.server_log``) when ``log_path`` shows one.

    Returns seconds from the call to the first healthy answer.
    """
    start = time.monotonic()
    with httpx.Client(timeout=5.0) as client:
        while True:
            if not alive():
                cause = log_root_cause(log_path) if log_path is not None else None
                said = f": {cause}" if cause else ""
                raise ByogError(f"server '{name}' exited before it became healthy{said}; last log lines:\n{log_tail()}")
            try:
                if client.get(f"{base_url}/health").status_code == 200:
                    return time.monotonic() - start
            except httpx.HTTPError:
                pass
            if time.monotonic() - start > timeout_s:
                raise ByogError(
                    f"server '{name}' did not answer /health within {timeout_s:.0f} s; last log lines:\n{log_tail()}"
                )
            time.sleep(HEALTH_POLL_S)


def probe_server(base_url: str) -> dict[str, Any]:
    """/version and /v1/models as the server reports them (recorded verbatim)."""
    found: dict[str, Any] = {}
    with httpx.Client(timeout=10.0) as client:
        for key, path in (("version", "/version"), ("models", "/v1/models")):
            try:
                response = client.get(f"{base_url}{path}")
                found[key] = response.json() if response.status_code == 200 else None
            except (httpx.HTTPError, ValueError):
                found[key] = None
    return found


def served_parallel_config(base_url: str) -> dict[str, int] | None:
    """TP/PP/DP sizes as the server itself reports them, or None where it does not say.

    vLLM answers ``GET /server_info?config_format=json`` only in dev mode (``VLLM_SERVER_DEV_MODE=1``);
    an endpoint byog did not launch is otherwise opaque and the plan's sizes are all byog has.
    """
    try:
        response = httpx.get(f"{base_url}/server_info", params={"config_format": "json"}, timeout=60.0)
        parallel = (
            response.json().get("vllm_config", {}).get("parallel_config") if response.status_code == 200 else None
        )
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    if not isinstance(parallel, dict):
        return None
    keys = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "decode_context_parallel_size")
    found = {k: parallel[k] for k in keys if isinstance(parallel.get(k), int)}
    return found or None


def served_max_model_len(models: dict[str, Any] | None) -> int | None:
    for card in (models or {}).get("data", []):
        max_model_len = card.get("max_model_len")
        if isinstance(max_model_len, int):
            return max_model_len
    return None


def write_server_record(path: Path, record: dict[str, Any]) -> None:
    atomic_write_json(path, {"byog_version": __version__, **record})


def endpoint_after_start(
    base_url: str, model: PreparedModel, config: ServerBase, argv: list[str], probe: dict[str, Any]
) -> Endpoint:
    """The Endpoint of a server byog launched: limits as the server reports them, else as launched."""
    max_num_seqs = arg_value(argv, "--max-num-seqs")
    return Endpoint(
        base_url=base_url,
        model=model.served_name,
        tokenizer=model.tokenizer,
        max_model_len=served_max_model_len(probe.get("models")) or model.max_model_len,
        max_num_seqs=int(max_num_seqs) if max_num_seqs else None,
        tensor_parallel_size=config.tensor_parallel_size,
    )
