"""What every runtime does around a server: wait for /health, probe it, write server.json."""

from __future__ import annotations

import datetime
import json
import os
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from byog import __version__
from byog.analysis.server_log import attention_backend, root_cause
from byog.core.argv import arg_value
from byog.core.errors import ByogError
from byog.core.io import atomic_write_json
from byog.images.fingerprint import gpu_fingerprint
from byog.schemas.plan import ServerBase
from byog.schemas.server import Endpoint, GpuFacts, Listen, PreparedModel, Resolved, ServerGpus, ServerRecord

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


# Fields of /server_info that hold a secret, removed by their path (never by a substring of a name):
# vLLM leaves secret-named variables out of vllm_env and system_env.env_vars itself, but echoes these.
SECRET_FIELDS: dict[str, str] = {
    "vllm_config.model_config.hf_token": "--hf-token, echoed in plain text",
    "vllm_config.speculative_config.draft_model_config.hf_token": "the draft model's copy of --hf-token",
}
MAX_SERVER_INFO_BYTES = 256 << 10  # a real answer is ~25 kB; a larger one is not kept (resolved: unknown), so
# server.json stays well within verify's 1 MiB bound on it
SERVER_INFO_TIMEOUT_S = 60.0  # the first answer collects the system env (1.6-3.1 s on a CPU host)
PARALLEL_SIZES = (
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "data_parallel_size",
    "decode_context_parallel_size",
)


def remove_secrets(info: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``info`` without the fields of SECRET_FIELDS that it holds (null or not), and the paths removed."""
    removed = []
    for path in SECRET_FIELDS:
        *parents, leaf = path.split(".")
        node: Any = info
        for key in parents:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict) and leaf in node:
            del node[leaf]
            removed.append(path)
    return info, removed


def _read_server_info(base_url: str) -> tuple[dict[str, Any] | None, int | None, str | None]:
    """(the answer, its size, why there is none), reading at most MAX_SERVER_INFO_BYTES."""
    url = f"{base_url}/server_info"
    try:
        with httpx.stream("GET", url, params={"config_format": "json"}, timeout=SERVER_INFO_TIMEOUT_S) as response:
            if response.status_code != 200:
                return (
                    None,
                    None,
                    f"/server_info answered HTTP {response.status_code} (no dev mode, or a vLLM without it)",
                )
            body = b""
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_SERVER_INFO_BYTES:
                    return None, None, f"/server_info answered over {MAX_SERVER_INFO_BYTES} bytes"
    except httpx.HTTPError as err:
        return None, None, f"/server_info did not answer: {type(err).__name__}"
    try:
        answer = json.loads(body)
    except ValueError:
        return None, len(body), "/server_info answered something that is not JSON"
    if not isinstance(answer, dict) or not isinstance(answer.get("vllm_config"), dict):
        return None, len(body), "/server_info answered no vllm_config object"
    return answer, len(body), None


def resolved_config(base_url: str, log_path: Path | None = None) -> Resolved:
    """What the server resolved (``/server_info``, secrets removed), and the attention backend it used."""
    answer, size, unknown = _read_server_info(base_url)
    removed: list[str] = []
    if answer is not None:
        answer, removed = remove_secrets(answer)
    config = (answer or {}).get("vllm_config", {})
    attention = config.get("attention_config") if isinstance(config, dict) else None
    backend = attention.get("backend") if isinstance(attention, dict) else None
    said = backend if isinstance(backend, str) and backend else None
    logged = None if said else _logged_backend(log_path)
    return Resolved(
        server_info=answer,
        answer_bytes=size,
        removed=removed,
        unknown=unknown,
        attention_backend=said or logged or "unknown",
        attention_backend_from="server_info" if said else "server.log" if logged else None,
    )


def _logged_backend(path: Path | None) -> str | None:
    if path is None or not path.is_file():
        return None
    with path.open("rb") as handle:
        handle.seek(max(0, path.stat().st_size - LOG_READ_BYTES))
        return attention_backend(handle.read().decode("utf-8", "replace"))


def parallel_sizes(resolved: Resolved) -> dict[str, int] | None:
    """TP/PP/DP/DCP sizes as the server resolved them, or None where it did not say."""
    config = (resolved.server_info or {}).get("vllm_config", {})
    parallel = config.get("parallel_config") if isinstance(config, dict) else None
    if not isinstance(parallel, dict):
        return None
    found = {k: parallel[k] for k in PARALLEL_SIZES if isinstance(parallel.get(k), int)}
    return found or None


def listen_of(argv: list[str], env: dict[str, str]) -> Listen:
    """Where vLLM listened (its --host and --port) and whether its dev routes were on."""
    port = arg_value(argv, "--port")
    return Listen(
        host=arg_value(argv, "--host"),
        port=int(port) if port and port.isdigit() else None,
        dev_mode=env.get("VLLM_SERVER_DEV_MODE") == "1",
    )


def gpus_seen(nvml: dict[str, Any], visible: str | None) -> ServerGpus:
    """The GPUs of an NVML fingerprint (``gpu_fingerprint``) that CUDA_VISIBLE_DEVICES lets a server see."""
    if not nvml.get("available"):
        return ServerGpus(unknown=str(nvml.get("reason") or "no NVML fingerprint"))
    cards = [
        GpuFacts.model_validate({**card, "driver_version": nvml.get("driver_version")})
        for card in nvml.get("gpus") or []
    ]
    if visible is None:
        return ServerGpus(gpus=cards)
    wanted = [item.strip() for item in visible.split(",") if item.strip()]
    chosen = [
        card
        for card in cards
        if any(
            w == str(card.index) or (card.uuid is not None and card.uuid.startswith(w) and w.startswith("GPU-"))
            for w in wanted
        )
    ]
    return ServerGpus(gpus=chosen)


def local_gpus(env: dict[str, str]) -> ServerGpus:
    """The host's GPUs a server started with ``env`` (over this process's environment) sees."""
    visible = env.get("CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES"))
    return gpus_seen(gpu_fingerprint(), visible)


def served_max_model_len(models: dict[str, Any] | None) -> int | None:
    for card in (models or {}).get("data", []):
        max_model_len = card.get("max_model_len")
        if isinstance(max_model_len, int):
            return max_model_len
    return None


def write_server_record(path: Path, record: ServerRecord) -> None:
    record.byog_version = __version__
    atomic_write_json(path, record.model_dump(mode="json"))


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
