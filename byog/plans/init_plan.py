"""The plan ``byog init`` writes: a commented plan.yaml from a few answers, every default with its reason.

Pure: the answers (and what byog found on this machine: GPUs, the model's config, the merge base) come
in as data (``byog.pipeline.init`` gathers them); out comes YAML text that ``byog plan`` accepts.

What the candidate is decides the servers:
- a build (``installed``: the vLLM beside byog; ``python``: another Python environment; ``image``;
  ``wheel``: a wheel layered over the stock image) -> candidate and baseline, the baseline stock vLLM
  at the PR's merge base by default;
- extra ``vllm serve`` flags -> the same build with and without them;
- a switch (``--additional-config``) on a PR build -> three servers: stock at the merge base, the PR with
  the switch off, the PR with it on. The claim is on vs off; the isolation pair holds the merge base
  against switch-off (the off server is the reference of both pairs, so the numerics differential
  compares each with one token path and no chain), which must show no measurable change;
- an endpoint -> a running server, byog launches nothing for it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from byog.plans.kv_memory import KvShape, kv_bytes_per_sequence
from byog.plans.server_flags import flag_name
from byog.plans.tasks import TASKS, answer_tokens

BuildKind = Literal["installed", "python", "image", "wheel", "endpoint", "flags"]
BUILD_KINDS: tuple[str, ...] = ("installed", "python", "image", "wheel", "endpoint", "flags")
BaselineKind = Literal["merge-base", "installed", "python", "image", "endpoint", "flags"]
BASELINE_KINDS: tuple[str, ...] = ("merge-base", "installed", "python", "image", "endpoint", "flags")

# vLLM's default --gpu-memory-utilization: the share of a GPU's memory vLLM takes for weights, activations and KV
GPU_MEMORY_UTILIZATION = 0.9
# a TP size fits when the weights per GPU leave at least this share of vLLM's budget to the KV cache
# and activations (the decode sweep's largest batch must also fit: ``tp_choices``)
KV_ROOM_SHARE = 0.25
GPU_BATCHES = [1, 2, 4, 8, 16, 32, 64]  # the decode sweep B = 1..64 (the published Kimi K3 table's)
GPU_ISL, GPU_OSL = 1, 1000  # decode-dominated, as the Kimi K3 speculative headline
CPU_BATCHES, CPU_ISL, CPU_OSL = [1, 2, 4], 32, 64  # the smoke profile's sizes: minutes on a laptop
# Every server of a CPU plan, as the smoke profile's: float32, since vLLM's CPU default bf16 is emulated
# on CPUs without AVX-512 BF16 (byog/plans/profiles/smoke.yaml has the measurement).
CPU_SERVER_ARGS = ["--dtype", "float32"]
LONG_CONTEXT_ISL = [8192, 32768]


@dataclass(frozen=True)
class Build:
    """Where a server's vLLM comes from (``value``: a path, an image, a wheel, a URL or flags)."""

    kind: str
    value: str = ""


@dataclass(frozen=True)
class Gpus:
    count: int
    model: str | None = None
    memory_bytes: int | None = None  # of one GPU

    @property
    def said(self) -> str:
        if not self.count:
            return "no GPU found through NVML: the plan runs the CPU build"
        gib = f", {self.memory_bytes / 2**30:.0f} GiB each" if self.memory_bytes else ""
        return f"{self.count} x {self.model or 'GPU'}{gib} (NVML)"


@dataclass(frozen=True)
class Baseline:
    """The baseline as init resolved it: the build and how it is obtained (a comment in the plan)."""

    build: Build
    how: str
    stock: bool = True
    args: list[str] = field(default_factory=list)  # extra `vllm serve` flags of the baseline (not stock then)
    commit: str | None = None  # the merge base, where that is the baseline
    distance: str | None = None  # byog.images.merge_base.distance_line


@dataclass(frozen=True)
class InitAnswers:
    name: str
    model: str
    candidate: Build
    baseline: Baseline
    gpus: Gpus
    tp: int
    tp_why: str
    switch: dict[str, Any] = field(default_factory=dict)  # --additional-config keys of the PR's switch
    batch_sizes: list[int] = field(default_factory=list)
    isl: int = GPU_ISL
    osl: int = GPU_OSL
    long_context: bool = False
    reasoning_evals: bool = False
    subject: str | None = None  # --for OWNER/REPO#N
    max_model_len: int | None = None

    @property
    def cpu(self) -> bool:
        return self.gpus.count == 0

    @property
    def isolation(self) -> bool:
        """A switch on a PR build: plan the merge base, switch off and switch on."""
        return bool(self.switch) and self.candidate.kind not in ("installed", "flags", "endpoint")


def tp_choices(
    weights_bytes: int | None, gpus: Gpus, heads: int | None, shape: KvShape | None, tokens: int, batch: int
) -> list[int]:
    """The TP sizes (powers of two up to the GPU count that divide the attention heads) whose weights per
    GPU leave ``KV_ROOM_SHARE`` of vLLM's budget free and whose KV cache for ``batch`` sequences of ``tokens``
    fits beside them. Unknown weights or memory: every power of two (nothing to judge with)."""
    sizes = [t for t in (1, 2, 4, 8, 16) if t <= max(gpus.count, 1) and (heads is None or heads % t == 0)]
    if weights_bytes is None or not gpus.memory_bytes:
        return sizes
    budget = GPU_MEMORY_UTILIZATION * gpus.memory_bytes
    fitting = []
    for t in sizes:
        per_gpu = weights_bytes / t
        kv = batch * kv_bytes_per_sequence(shape, tokens, tp=t) if shape is not None else 0
        if per_gpu <= (1 - KV_ROOM_SHARE) * budget and per_gpu + kv <= budget:
            fitting.append(t)
    return fitting


# --- the YAML, written by hand so every default carries its comment --------------------------------


def _q(value: Any) -> str:
    """A YAML scalar: JSON's quoting is valid YAML for strings, numbers and lists."""
    return json.dumps(value)


def _server_lines(name: str, build: Build, args: list[str], extra: Mapping[str, Any], tp: int) -> list[str]:
    lines = [f"  {name}:"]
    if build.kind in ("image", "wheel"):
        lines.append("    runtime: docker")
        image = build.value
        if build.kind == "wheel":
            lines.append(
                f"    # the wheel layered over the stock eval image: byog image build --vllm-wheel {build.value}"
            )
            image = f"<SET-ME: the digest byog image inspect prints for the image built from {build.value}>"
        lines.append(f"    image: {_q(image)}")
    elif build.kind == "endpoint":
        lines.append("    runtime: endpoint")
        lines.append(f"    url: {_q(build.value)}")
    else:
        lines.append("    runtime: local")
        if build.kind == "python":
            lines.append(f"    python: {_q(build.value)}")
    if tp > 1:
        lines.append(f"    tensor_parallel_size: {tp}")
    if args:
        lines.append(f"    args: {_q(args)}")
    for key, value in extra.items():
        lines.append(f"    {key}: {_q(value)}")
    return lines


def _build_comment(build: Build) -> str:
    return {
        "installed": "the vLLM installed beside byog (an editable PR checkout, or stock)",
        "python": f"the Python environment {build.value} (byog starts its vLLM there)",
        "image": f"the image {build.value}",
        "wheel": "the stock eval image with the PR's wheel layered over it",
        "endpoint": f"the running server at {build.value} (byog launches nothing)",
        "flags": "the vLLM installed beside byog, with the PR's flags",
    }[build.kind]


def _flags_of(build: Build) -> list[str]:
    return build.value.split() if build.kind == "flags" else []


def _cpu_defaults(own: list[str]) -> list[str]:
    """CPU_SERVER_ARGS (flag-value pairs) less the flags a server's own args name, so each flag appears
    once on its command line and the server's own value is the one it runs with."""
    named = {flag_name(token) for token in own if token.startswith("--")}
    pairs = zip(CPU_SERVER_ARGS[::2], CPU_SERVER_ARGS[1::2], strict=True)
    return [token for flag, value in pairs if flag not in named for token in (flag, value)]


def _servers(a: InitAnswers) -> tuple[list[str], list[str]]:
    """(the ``servers:`` block, the ``pairs:`` block)."""
    base, cand = a.baseline, a.candidate

    def args(own: list[str]) -> list[str]:
        return [*_cpu_defaults(own), *own] if a.cpu else own

    lines = ["servers:"]
    if a.isolation:
        lines.append(f"  # the PR with its switch on: {_build_comment(cand)}")
        lines += _server_lines("switch-on", cand, args([]), {"additional_config": a.switch}, a.tp)
        lines.append("  # the same build with the switch off: vLLM's default path, which the PR must leave unchanged")
        lines += _server_lines("switch-off", cand, args([]), {}, a.tp)
        lines.append(f"  # stock vLLM: {base.how}")
        lines += _server_lines("merge-base", base.build, args(base.args), {}, a.tp)
        pairs = [
            "# The claim: switch on vs switch off, one build, one switch.",
            "# The isolation pair: stock at the merge base vs the PR with its switch off. It must show no",
            "# measurable change (greedy outputs identical within the numerics A/A envelope, performance within",
            "# the noise): the first screen says 'switch off: no measurable change' or names what changed.",
            "# switch-off is the reference of both pairs, so the numerics differential holds each against one",
            "# token path (no chain of baselines).",
            "pairs:",
            f"  - {{candidate: switch-on, baseline: switch-off, differs_in: {_q(_switch_facts(a.switch))}, "
            "baseline_is_stock: false}",
            "  - {candidate: merge-base, baseline: switch-off, isolation: true, baseline_is_stock: false}",
        ]
        return lines, pairs
    cand_args = _flags_of(cand)
    extra = {"additional_config": a.switch} if a.switch else {}
    lines.append(f"  # {_build_comment(cand)}")
    lines += _server_lines("candidate", cand, args(cand_args), extra, a.tp)
    lines.append(f"  # {base.how}")
    lines += _server_lines("baseline", base.build, args(base.args), {}, a.tp)
    differs = [*cand_args, *base.args, *_switch_facts(a.switch)]
    pairs = ["pairs:"]
    if not base.stock:
        pairs.insert(0, "# Not a stock comparison: the baseline is not stock vLLM, which verify and the report say.")
    pairs.append(
        f"  - {{candidate: candidate, baseline: baseline, differs_in: {_q(differs)}, "
        f"baseline_is_stock: {_q(base.stock)}}}"
    )
    return lines, pairs


def _switch_facts(switch: Mapping[str, Any]) -> list[str]:
    """The launch facts a switch differs in, as ``byog verify`` names them."""
    return [f"additional_config.{key}" for key in switch]


def _workloads(a: InitAnswers) -> list[str]:
    why = (
        "the CPU build: the smoke profile's sizes, minutes on a laptop"
        if a.cpu
        else "the decode sweep B = 1..64 at the claim's ISL/OSL (--isl/--osl; default ISL 1, OSL 1000: decode only)"
    )
    lines = [
        "workloads:",
        f"  # {why}",
        "  - kind: batch",
        "    name: decode",
        f"    batch_sizes: {_q(a.batch_sizes)}",
        f"    isl: [{a.isl}]",
        f"    osl: [{a.osl}]",
        "    warmup_waves: 1",
        "    waves: 3",
    ]
    if a.long_context:
        isl = [i for i in LONG_CONTEXT_ISL if a.max_model_len is None or i + a.osl <= a.max_model_len]
        lines += [
            "  # --long-context: decode at long prompts, the contexts that fit the model's max_model_len",
            "  - kind: batch",
            "    name: longctx",
            f"    batch_sizes: {_q([b for b in a.batch_sizes if b <= 16])}",
            f"    isl: {_q(isl or [LONG_CONTEXT_ISL[0]])}",
            f"    osl: [{a.osl}]",
            "    warmup_waves: 1",
            "    waves: 3",
        ]
    return lines


REASONING_EVALS = {"aime25": 16, "gpqa_diamond": 10}  # --reasoning-evals: task -> the registry's recommended passes


def evals_context(reasoning_evals: bool) -> int:
    """The context a GPU plan's evals need: the largest task's prompt reserve + answer length, the rule
    preflight and the run refuse an eval by (``byog.plans.tasks.check_eval_fits``)."""
    tasks = ["gsm8k", *(REASONING_EVALS if reasoning_evals else ())]
    return max(TASKS[t].prompt_reserve_tokens + answer_tokens(TASKS[t]) for t in tasks)


def _evals(a: InitAnswers) -> list[str]:
    if a.cpu:
        return [
            "# GSM8K always; on the CPU build 10 items (the smoke tier's size): the harness works, the verdict is",
            "# screening (`byog plan` shows the predicted false-fail rate). byog's generated arithmetic gives a",
            "# real verdict on a small model in ~20 s per server.",
            "evals:",
            "  - task: gsm8k",
            "    limit: 10",
            "    passes: 1",
            "    margin: 3.0",
            "  - task: arithmetic_generated",
            "    limit: 200",
            "    passes: 1",
        ]
    lines = [
        "# GSM8K always (the whole test set, greedy: the task registry's recommended design);",
        "# reasoning evals (--reasoning-evals) with the registry's recommended passes.",
        "evals:",
        "  - task: gsm8k",
        "    passes: 1",
    ]
    if a.reasoning_evals:
        lines += [
            line for task, passes in REASONING_EVALS.items() for line in (f"  - task: {task}", f"    passes: {passes}")
        ]
    return lines


def _seeds(a: InitAnswers) -> str:
    passes = max(REASONING_EVALS.values()) if a.reasoning_evals and not a.cpu else 1
    return f"seeds: {_q([1234 + i for i in range(passes)])}"


def plan_yaml(a: InitAnswers) -> str:
    """The commented plan.yaml for ``a``."""
    servers, pairs = _servers(a)
    head = [
        f"# Written by `byog init`{f' for {a.subject}' if a.subject else ''}. Every default below names its reason;",
        "# `byog plan` on this file shows the matrix, launch commands and the estimate of each tier.",
        f"# GPUs: {a.gpus.said}.",
        f"# TP {a.tp}: {a.tp_why}.",
        f"# Baseline: {a.baseline.how}.",
    ]
    if a.baseline.distance:
        head.append(f"# {a.baseline.distance}.")
    if a.subject:
        head.append(
            f"# Run: byog run THIS_FILE --tier smoke, then byog run THIS_FILE --tier standard --for {a.subject}"
        )
    model = ["model:", f"  path: {_q(a.model)}"]
    if a.max_model_len:
        why = (
            "the CPU build's default KV space holds it (as the smoke profile)"
            if a.cpu
            else "the longest point and every eval's prompts + answers fit"
        )
        model.append(f"  max_model_len: {a.max_model_len}  # {why}")
    launches = (
        [
            "# One launch per server on the CPU build: a pipeline check, its perf labels are screening.",
            "launches: 1",
        ]
        if a.cpu
        else [
            "# Two launches of every server in ABBA order: the perf CIs hold launch-to-launch variance",
            "# (docs/statistics.md §6); `launches: 1` halves the start-ups but its labels are screening only.",
            "launches: 2",
        ]
    )
    numerics = (
        [
            "# The token-level differential: switch-off's greedy outputs against the merge base's, within the",
            "# A/A envelope of switch-off's eager variant (docs/numerics.md).",
            "numerics: {}",
        ]
        if a.isolation
        else []
    )
    body = [
        *head,
        f"name: {_q(a.name)}",
        f"description: {_q(_description(a))}",
        *model,
        *servers,
        f"baseline: {'switch-off' if a.isolation else 'baseline'}",
        *pairs,
        *_workloads(a),
        *_evals(a),
        _seeds(a),
        *launches,
        *numerics,
    ]
    return "\n".join(body) + "\n"


def _description(a: InitAnswers) -> str:
    what = "switch on vs off, and off vs the merge base" if a.isolation else "candidate vs baseline"
    return f"{a.model}: {what} ({a.gpus.said})"
