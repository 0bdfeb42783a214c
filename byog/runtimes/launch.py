"""The one place that turns a ServerConfig into a `vllm serve` command line and environment.

Every runtime (local process, docker, multi-node) builds its launch from here, so a plan's
server means the same thing wherever it runs.
"""

from __future__ import annotations

import json

from byog.schemas.plan import LaunchedConfig, ServerBase
from byog.schemas.server import PreparedModel

# Defaults a CPU build of vLLM needs (a bounded KV cache: several servers share one small
# machine); a server config's own env overrides them. GPU builds get none of these.
CPU_DEFAULT_ENV = {"VLLM_CPU_KVCACHE_SPACE": "2"}

# Env var names whose values are secrets: passed to the server, never written to a record. By name,
# never by a substring of one: VLLM_MAX_BAD_WORDS_TOTAL_TOKENS is a setting whose differences must show.
SECRET_ENV = {
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "VLLM_API_KEY",
    "OPENAI_API_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "WANDB_API_KEY",
}
# Every server byog launches serves vLLM's dev routes: /server_info (what it resolved, recorded in
# server.json) and the sleep/wake of interleaved pairs. They are not behind --api-key, so such a
# server listens only where byog's client reaches it (loopback unless the plan names an interface).
DEV_MODE_ENV = {"VLLM_SERVER_DEV_MODE": "1"}


def vllm_serve_args(config: ServerBase, model: PreparedModel, host: str, port: int) -> list[str]:
    """Arguments after `vllm serve` (the model first), identical for every runtime."""
    args = [model.path, "--host", host, "--port", str(port), "--served-model-name", model.served_name]
    if model.max_model_len:
        args += ["--max-model-len", str(model.max_model_len)]
    if config.tensor_parallel_size > 1:
        args += ["--tensor-parallel-size", str(config.tensor_parallel_size)]
    if config.data_parallel_size > 1:
        args += ["--data-parallel-size", str(config.data_parallel_size)]
    if config.decode_context_parallel_size > 1:
        args += ["--decode-context-parallel-size", str(config.decode_context_parallel_size)]
    if config.additional_config:
        args += ["--additional-config", json.dumps(config.additional_config, sort_keys=True)]
    if config.speculative_config:
        args += ["--speculative-config", json.dumps(config.speculative_config, sort_keys=True)]
    return args + list(config.args)


def local_vllm_argv(cli: list[str], config: ServerBase, model: PreparedModel, host: str, port: int) -> list[str]:
    """The local runtime's full argv: ``cli`` (vLLM's CLI in the server's interpreter, runtimes/interpreter.py)."""
    return [*cli, "serve", *vllm_serve_args(config, model, host, port)]


def server_env(config: ServerBase, cpu_build: bool = False) -> dict[str, str]:
    """What the server's processes get: byog's CPU defaults under the plan's ``env``, dev mode on (endpoint: none)."""
    if not isinstance(config, LaunchedConfig):
        return {}
    return {**(CPU_DEFAULT_ENV if cpu_build else {}), **config.env, **DEV_MODE_ENV}


def redact_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` with the values of SECRET_ENV's names replaced by ``<redacted>``."""
    return {key: ("<redacted>" if key in SECRET_ENV else value) for key, value in env.items()}
