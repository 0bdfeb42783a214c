"""What each server of a pair was asked to run, and what it ran, from their server.json records.

What was asked (``asked_facts``), each compared as a string:
- every ``vllm serve`` flag (``--kv-cache-dtype``: its value; a switch: empty; a short alias under
  its long name: ``-O`` is ``--optimization-level`` in vLLM 0.32), the flags that name an instance
  aside (``byog.analysis.resolved_diff.IGNORED_FLAGS``); the JSON flags key by key, as
  ``additional_config.decode_backend``, the last of a repeated one (vLLM keeps the last);
- ``env.NAME`` for every variable the server was given (byog's own per-node variables aside).

What ran (``identity_facts``), whatever was asked:
- ``image`` (its digests, else its id), ``code`` (vLLM distribution, version, commit, wheel and
  RECORD hashes, whole), ``weights`` and ``tokenizer`` (the full digests of their files, or hub id
  and revision);
- ``hardware`` (per node: the accelerator model and count, or the CPU), ``gpus`` (per node, the NVML
  facts of the GPUs the server saw, their UUIDs aside) and ``nodes``.

What vLLM resolved is compared by ``byog.analysis.resolved_diff``. A pair differs in a fact when the
two values differ or one side lacks it. Policy names match a fact exactly or as a prefix at a dot
(``additional_config`` allows ``additional_config.decode_backend``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from byog.analysis.hardware import accelerators, describe
from byog.analysis.resolved_diff import IGNORED_FLAGS, IgnoreWhen, covered, ignored
from byog.schemas.env import EnvRecord
from byog.schemas.server import GitState, ModelFilesIdentity, ServerGpus, ServerIdentity, ServerRecord

JSON_FLAGS = frozenset({"--additional-config", "--speculative-config", "--compilation-config", "--kv-transfer-config"})
# vLLM 0.32's short flags (vllm/engine/arg_utils.py), read as their long names; -O is special-cased
# there too (-O3, -O=3, -O 3: --optimization-level).
FLAG_ALIASES = {
    "-tp": "--tensor-parallel-size",
    "-pp": "--pipeline-parallel-size",
    "-dp": "--data-parallel-size",
    "-dpn": "--data-parallel-rank",
    "-dpr": "--data-parallel-start-rank",
    "-dpl": "--data-parallel-size-local",
    "-dpa": "--data-parallel-address",
    "-dpp": "--data-parallel-rpc-port",
    "-dpb": "--data-parallel-backend",
    "-dph": "--data-parallel-hybrid-lb",
    "-dpe": "--data-parallel-external-lb",
    "-dpm": "--data-parallel-multi-port-external-lb",
    "-dcp": "--decode-context-parallel-size",
    "-pcp": "--prefill-context-parallel-size",
    "-ep": "--enable-expert-parallel",
    "-q": "--quantization",
    "-n": "--nnodes",
    "-r": "--node-rank",
    "-O": "--optimization-level",
    "-sc": "--speculative-config",
    "-dc": "--diffusion-config",
    "-cc": "--compilation-config",
    "-ac": "--attention-config",
}
# A pair that differs in these does not compare an implementation: it compares machines or models.
ALWAYS_SAME = ("hardware", "gpus", "weights", "tokenizer")
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
        if self.key in SIDE_BY_SIDE:
            return f"{self.key}: candidate {self.candidate}; baseline {self.baseline}"
        if self.key in WHOLE_VALUES:
            return f"{self.key} {self.candidate} (baseline {self.baseline})"
        return f"{self.key} {_short(self.candidate)} (baseline {_short(self.baseline)})"


SHORT_VALUE_CHARS = 80
WHOLE_VALUES = frozenset({"code", "weights", "tokenizer", "image"})  # digests are compared and shown whole
SIDE_BY_SIDE = frozenset({"python", "install"})  # sentences, shown whole, each side named


def _short(value: str) -> str:
    """A long value (a JSON flag) cut to one readable line."""
    return value if len(value) <= SHORT_VALUE_CHARS else value[: SHORT_VALUE_CHARS - 3] + "..."


def _is_value(token: str) -> bool:
    """A token after a flag that is its value: not a flag (long or short), though a negative number is."""
    return not token.startswith("-") or token[1:2].isdigit() or token[1:2] == "."


def serve_flags(argv: list[str]) -> dict[str, str]:
    """The flags after ``serve MODEL`` (everything when there is no ``serve``), those naming an instance aside."""
    args = argv[argv.index("serve") + 2 :] if "serve" in argv else list(argv)
    found: dict[str, str] = {}
    index = 0
    while index < len(args):
        token = args[index]
        index += 1
        if not token.startswith("-") or _is_value(token):
            continue  # a positional (the model, when argv names no serve)
        name, has_value, value = token.partition("=")
        if name.startswith("-O") and len(name) > 2 and not has_value:
            name, has_value, value = "-O", "=", name[2:]  # -O3: the level joined to the flag
        if name.startswith("--"):  # vLLM reads --enforce_eager as --enforce-eager (a JSON key keeps its name)
            head, dot, rest = name[2:].partition(".")
            name = f"--{head.replace('_', '-')}{dot}{rest}"
        name = FLAG_ALIASES.get(name, name)
        if not has_value and index < len(args) and _is_value(args[index]):
            value = args[index]
            index += 1
        if name in IGNORED_FLAGS:
            continue
        flag, dot, path = name.partition(".")
        if dot and flag in JSON_FLAGS:  # --additional-config.beta=2: one key of the JSON flag
            found[f"{flag[2:].replace('-', '_')}.{path}"] = value
        elif name in JSON_FLAGS:
            prefix = name.lstrip("-").replace("-", "_")
            found = {k: v for k, v in found.items() if not covered(k, [prefix])}  # vLLM keeps the last
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


def code_label(identity: ServerIdentity | None, digits: int | None = None) -> str | None:
    """'vllm 0.32.0 commit ... wheel ... files ...': digests whole (the pair check compares these),
    or cut to ``digits`` for display (the report's table, which must render as it always has)."""
    vllm = identity.vllm if identity is not None else None
    if vllm is None or vllm.error or not vllm.version:
        return None
    parts = [f"{vllm.distribution or 'vllm'} {vllm.version}"]
    for name, value in (("commit", vllm.commit), ("wheel", vllm.wheel_sha256), ("files", vllm.record_sha256)):
        if value:
            parts.append(f"{name} {value[:digits]}")
    return " ".join(parts)


def _git_label(git: GitState | None) -> str:
    if git is None or git.error or git.head is None:
        return f" (git state unknown: {git.error})" if git is not None and git.error else " (git state unknown)"
    return f" @ {git.head[:7]}" + (f" (dirty: {git.changed_files} files)" if git.dirty else " (clean)")


def install_label(identity: ServerIdentity | None) -> str | None:
    """How the server's vLLM was installed, as the pair line says it: "editable install of /src/vllm @ 1a2b3c4
    (dirty: 2 files)", "vllm 0.32.0 from the index (imported from ...)"; None: not recorded (unknown)."""
    vllm = identity.vllm if identity is not None else None
    install = vllm.install if vllm is not None and not vllm.error else None
    if vllm is None or install is None or install.kind is None:
        return None
    build = f"{vllm.distribution or 'vllm'} {vllm.version or '(version unknown)'}"
    if install.kind in ("editable", "directory"):
        what = "editable install of" if install.kind == "editable" else f"{build} installed from"
        return f"{what} {install.source_dir or install.url}{_git_label(install.git)}"
    source = {"index": "the index", "vcs": install.url, "archive": install.url}[install.kind]
    return f"{build} from {source} (imported from {install.location or 'an unknown place'})"


def _files_label(identity: ServerIdentity | None, kind: str) -> str | None:
    """The digest of a model's weight and config files (or of its tokenizer's), else hub id and revision."""
    if identity is None:
        return None
    files = identity.tokenizer if kind == "tokenizer" and identity.tokenizer is not None else identity.weights
    if files is None:
        return None
    digest = files.weights_sha256 if kind == "weights" else files.tokenizer_sha256
    if digest:
        return f"sha256 {digest}"
    if files.hub_id:
        return f"{files.hub_id}@{files.revision or 'unresolved'}"
    return None


def _node_envs(record: ServerRecord, host: EnvRecord) -> list[EnvRecord]:
    nodes = record.nodes or []
    found = [node.fingerprint for node in nodes if node.fingerprint is not None]
    return found or [host]


# byog's own per-node variables in what it set: which GPUs and ports a node got. The GPUs are
# compared by their NVML facts (``gpus``); the resolved side compares CUDA_VISIBLE_DEVICES itself.
BYOG_ENV = frozenset({"CUDA_VISIBLE_DEVICES"})


def asked_facts(record: ServerRecord) -> dict[str, str]:
    """What the server was asked to run: its command line's flags and the env byog set (see the docstring)."""
    facts = serve_flags(record.argv or [])
    everything = {IgnoreWhen.ALWAYS, IgnoreWhen.WEIGHTS_AGREE, IgnoreWhen.GPUS_AGREE}
    facts.update(
        {f"env.{k}": v for k, v in record.env.items() if k not in BYOG_ENV and ignored(f"env.{k}", everything) is None}
    )
    return facts


def _gpus_label(gpus: ServerGpus | None) -> str:
    if gpus is None:
        return NOT_RECORDED
    if gpus.unknown is not None:
        return "unknown"
    cards = [card.model_dump(exclude={"uuid", "index"}) for card in gpus.gpus]
    return json.dumps(sorted(cards, key=lambda c: json.dumps(c, sort_keys=True)), sort_keys=True)


def identity_facts(record: ServerRecord, host: EnvRecord) -> dict[str, str]:
    """What the server ran, whatever it was asked: image, code, weights, tokenizer and hardware."""
    facts: dict[str, str] = {}
    digests = record.repo_digests or record.image_digests
    if digests or record.image_id:
        facts["image"] = ", ".join(sorted(digests)) or str(record.image_id)
    for key, value in (
        ("code", code_label(record.identity)),
        ("python", record.identity.python if record.identity is not None else None),
        ("install", install_label(record.identity)),
        ("weights", _files_label(record.identity, "weights")),
        ("tokenizer", _files_label(record.identity, "tokenizer")),
    ):
        facts[key] = value or NOT_RECORDED
    nodes = _node_envs(record, host)
    facts["nodes"] = str(len(record.nodes or []) or 1)
    kinds = [dict(accelerators(env)) or describe(env) for env in nodes]
    facts["hardware"] = json.dumps(kinds, sort_keys=True)
    seen = [node.hardware for node in record.nodes] if record.nodes else [record.hardware]
    facts["gpus"] = " | ".join(_gpus_label(gpus) for gpus in seen)
    return facts


def files_digest(files: dict[str, str]) -> str:
    """One digest for a set of files: sha256 over sorted 'relative path<TAB>sha256' lines.

    The identity probe (``byog.runtimes.identity_probe``, a lone file run where the server runs)
    computes the recorded digests with its own copy of this formula; a unit test holds them equal.
    """
    return hashlib.sha256("".join(f"{name}\t{sha}\n" for name, sha in sorted(files.items())).encode()).hexdigest()


def _recomputed(files: ModelFilesIdentity, kind: str) -> str | None:
    tokenizer = {n: s for n, s in files.files.items() if file_kind(n) == "tokenizer"}
    if kind == "tokenizer":
        return files_digest(tokenizer) if tokenizer else None
    return files_digest({n: s for n, s in files.files.items() if n not in tokenizer})


TOKENIZER_NAMES = frozenset(
    {
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "vocab.json",
        "vocab.txt",
        "merges.txt",
        "added_tokens.json",
        "tokenizer.model",
        "chat_template.jinja",
        "chat_template.json",
    }
)


def file_kind(name: str) -> str:
    """The identity probe's sorting of a model's files (its TOKENIZER_FILES), for recomputing its digests."""
    base = name.rsplit("/", 1)[-1]
    return "tokenizer" if base in TOKENIZER_NAMES or base.endswith(".tiktoken") else "weights"


def digest_contradictions(name: str, identity: ServerIdentity | None) -> list[str]:
    """Where a recorded aggregate digest is not the one its own per-file hashes give."""
    found = []
    for kind, files in (
        ("weights", identity.weights if identity else None),
        ("tokenizer", identity.tokenizer if identity else None),
    ):
        if files is None or not files.files:
            continue
        for digest_kind in ("weights", "tokenizer") if kind == "weights" else ("tokenizer",):
            recorded = files.weights_sha256 if digest_kind == "weights" else files.tokenizer_sha256
            again = _recomputed(files, digest_kind)
            if recorded is not None and recorded != again:
                found.append(
                    f"server '{name}' records {digest_kind} sha256 {recorded}, but its per-file hashes give {again}"
                )
    return found


def launch_differences(candidate: dict[str, str], baseline: dict[str, str]) -> list[Difference]:
    """The facts in which two launches differ, in key order; a fact neither recorded is not a difference."""
    found = []
    for key in sorted(set(candidate) | set(baseline)):
        a, b = candidate.get(key), baseline.get(key)
        if a != b:
            found.append(Difference(key, a, b))
    return found


def unrecorded(difference: Difference) -> bool:
    return NOT_RECORDED in (difference.candidate, difference.baseline)
