"""How two servers of a pair were launched differently, computed from their server.json records.

A launch is a set of named facts, each compared as a string:
- every ``vllm serve`` flag (``--kv-cache-dtype``: its value; a switch: empty), byog's own flags
  aside (where it listens and under which name: ``BYOG_FLAGS``); the JSON flags (``--additional-config``,
  ``--speculative-config``, ``--compilation-config``) key by key, as ``additional_config.decode_backend``;
- ``env.NAME`` for every variable the server was given (byog's own per-node variables aside);
- ``image`` (its digests, else its id), ``code`` (vLLM distribution, version, commit, wheel and
  RECORD hashes), ``weights`` and ``tokenizer`` (the digests of their files, or hub id and revision);
- ``hardware`` (per node: the accelerator model and count, or the CPU), ``gpu_driver``,
  ``gpu_power_limit`` and ``nodes``.

A pair differs in a fact when the two values differ or one side lacks it. Policy names match a
fact exactly or as a prefix at a dot (``additional_config`` allows ``additional_config.decode_backend``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from byog.analysis.hardware import accelerators, describe
from byog.schemas.env import EnvRecord
from byog.schemas.server import ServerIdentity, ServerRecord

# Where byog makes a server listen and what it calls it: the same server on another port is the same launch.
BYOG_FLAGS = frozenset(
    {
        "--host",
        "--port",
        "--served-model-name",
        "--nnodes",
        "--node-rank",
        "--master-addr",
        "--master-port",
        "--headless",
        "--data-parallel-address",
        "--data-parallel-rpc-port",
        "--data-parallel-start-rank",
    }
)
JSON_FLAGS = frozenset({"--additional-config", "--speculative-config", "--compilation-config", "--kv-transfer-config"})
FLAG_ALIASES = {
    "-tp": "--tensor-parallel-size",
    "-pp": "--pipeline-parallel-size",
    "-dp": "--data-parallel-size",
    "-dcp": "--decode-context-parallel-size",
    "-O": "--compilation-config",
}
# byog's own per-node variables: which GPUs and ports a node got, not how the server runs.
BYOG_ENV = frozenset(
    {"BYOG_NODE_MARKER", "CUDA_VISIBLE_DEVICES", "VLLM_HOST_IP", "MASTER_ADDR", "MASTER_PORT", "VLLM_PORT"}
)
# A pair that differs in these does not compare an implementation: it compares machines or models.
ALWAYS_SAME = ("hardware", "weights", "tokenizer")
NOT_RECORDED = "(not recorded)"


@dataclass(frozen=True)
class Difference:
    key: str
    candidate: str | None  # None: the candidate lacks it
    baseline: str | None

    @property
    def label(self) -> str:
        """'--kv-cache-dtype fp8', '--enforce-eager (baseline only)', '--max-num-seqs 8 (baseline 256)'."""
        if self.baseline is None:
            return f"{self.key} {self.candidate}".strip()
        if self.candidate is None:
            return f"{self.key} {self.baseline}".strip() + " (baseline only)"
        return f"{self.key} {_short(self.candidate)} (baseline {_short(self.baseline)})"


SHORT_VALUE_CHARS = 80  # a code label (distribution, version, commit, wheel and files digests) fits whole


def _short(value: str) -> str:
    """A long value (a JSON flag) cut to one readable line."""
    return value if len(value) <= SHORT_VALUE_CHARS else value[: SHORT_VALUE_CHARS - 3] + "..."


def serve_flags(argv: list[str]) -> dict[str, str]:
    """The flags after ``serve MODEL`` (everything when there is no ``serve``), byog's own aside."""
    args = argv[argv.index("serve") + 2 :] if "serve" in argv else list(argv)
    found: dict[str, str] = {}
    index = 0
    while index < len(args):
        token = args[index]
        index += 1
        if not token.startswith("-"):
            continue  # a positional (the model, when argv names no serve)
        name, has_value, value = token.partition("=")
        name = FLAG_ALIASES.get(name, name)
        if not has_value and index < len(args) and not args[index].startswith("--"):
            value = args[index]
            index += 1
        if name in BYOG_FLAGS:
            continue
        if name in JSON_FLAGS:
            found.update(_json_facts(name, value))
        else:
            found[name] = value
    return found


def _json_facts(flag: str, value: str) -> dict[str, str]:
    prefix = flag.lstrip("-").replace("-", "_")
    try:
        parsed = json.loads(value)
    except ValueError:
        return {prefix: value}
    if not isinstance(parsed, dict):
        return {prefix: json.dumps(parsed, sort_keys=True)}
    return {f"{prefix}.{key}": _text(item) for key, item in parsed.items()}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def code_label(identity: ServerIdentity | None) -> str | None:
    vllm = identity.vllm if identity is not None else None
    if vllm is None or vllm.error or not vllm.version:
        return None
    parts = [f"{vllm.distribution or 'vllm'} {vllm.version}"]
    if vllm.commit:
        parts.append(f"commit {vllm.commit[:12]}")
    if vllm.wheel_sha256:
        parts.append(f"wheel {vllm.wheel_sha256[:12]}")
    if vllm.record_sha256:
        parts.append(f"files {vllm.record_sha256[:12]}")
    return " ".join(parts)


def _files_label(identity: ServerIdentity | None, kind: str) -> str | None:
    """The digest of a model's weight and config files (or of its tokenizer's), else hub id and revision."""
    if identity is None:
        return None
    files = identity.tokenizer if kind == "tokenizer" and identity.tokenizer is not None else identity.weights
    if files is None:
        return None
    digest = files.weights_sha256 if kind == "weights" else files.tokenizer_sha256
    if digest:
        return f"sha256 {digest[:12]}"
    if files.hub_id:
        return f"{files.hub_id}@{files.revision or 'unresolved'}"
    return None


def _node_envs(record: ServerRecord, host: EnvRecord) -> list[EnvRecord]:
    nodes = record.nodes or []
    found = [node.fingerprint for node in nodes if node.fingerprint is not None]
    return found or [host]


def _gpu_values(env: EnvRecord, name: str) -> set[str]:
    cards = [*(env.gpu.gpus if env.gpu else []), *env.gpus]
    return {str(value) for card in cards if (value := (card.model_extra or {}).get(name)) is not None}


def launch_facts(record: ServerRecord, host: EnvRecord) -> dict[str, str]:
    """Every fact of one server's launch that a pair compares (see the module docstring)."""
    facts = serve_flags(record.argv or [])
    env = (record.model_extra or {}).get("env")
    if isinstance(env, dict):
        facts.update({f"env.{k}": str(v) for k, v in env.items() if k not in BYOG_ENV})
    digests = record.repo_digests or record.image_digests
    if digests or record.image_id:
        facts["image"] = ", ".join(sorted(digests)) or str(record.image_id)
    for key, value in (
        ("code", code_label(record.identity)),
        ("weights", _files_label(record.identity, "weights")),
        ("tokenizer", _files_label(record.identity, "tokenizer")),
    ):
        facts[key] = value or NOT_RECORDED
    nodes = _node_envs(record, host)
    facts["nodes"] = str(len(record.nodes or []) or 1)
    kinds = [dict(accelerators(env)) or describe(env) for env in nodes]
    facts["hardware"] = json.dumps(kinds, sort_keys=True)
    drivers = sorted({env.gpu.driver_version for env in nodes if env.gpu and env.gpu.driver_version})
    if drivers:
        facts["gpu_driver"] = ",".join(drivers)
    power = sorted(set().union(*(_gpu_values(env, "power_limit_w") for env in nodes)))
    if power:
        facts["gpu_power_limit"] = ",".join(power)
    return facts


def launch_differences(candidate: dict[str, str], baseline: dict[str, str]) -> list[Difference]:
    """The facts in which two launches differ, in key order; a fact neither recorded is not a difference."""
    found = []
    for key in sorted(set(candidate) | set(baseline)):
        a, b = candidate.get(key), baseline.get(key)
        if a != b:
            found.append(Difference(key, a, b))
    return found


def covered(key: str, names: Iterable[str]) -> bool:
    """Whether a policy or plan name covers a fact: equal, or a prefix of it at a dot."""
    return any(key == name or key.startswith(name + ".") for name in names)


def unrecorded(difference: Difference) -> bool:
    return NOT_RECORDED in (difference.candidate, difference.baseline)
