"""``byog init``: gather what the plan needs (GPUs through NVML, the model's config.json and weights,
the candidate checkout's merge base), resolve the answers' defaults, write the commented plan.yaml
(byog.plans.init_plan) and check that it loads as ``byog plan`` loads it.

Nothing is asked here: the CLI asks (on a terminal) or takes flags, and hands the answers down.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from byog.core.errors import UsageError
from byog.core.io import atomic_write_text
from byog.images import merge_base as mb
from byog.images.fingerprint import gpu_fingerprint
from byog.images.models import check_model_reference, model_config_dir
from byog.plans import init_plan as ip
from byog.plans.expand import check_plan_fits
from byog.plans.kv_memory import kv_shape
from byog.plans.load import parse_plan
from byog.runtimes import identity_probe
from byog.runtimes.sleep_mode import weights_bytes
from byog.schemas.manifest import BundleSubject
from byog.schemas.plan import ModelSpec, Plan

CPU_MAX_MODEL_LEN = 4096  # as the smoke profile: the CPU build's default KV space holds it


@dataclass(frozen=True)
class InitRequest:
    """The answers as given (flags or the dialogue); ``None``: byog's default."""

    model: str
    candidate: ip.Build
    baseline: ip.Build | None = None  # None: stock vLLM at the merge base
    switch: tuple[str, ...] = ()  # KEY=VALUE of --additional-config
    checkout: Path | None = None
    tp: int | None = None
    isl: int | None = None
    osl: int | None = None
    batch_sizes: tuple[int, ...] = ()
    long_context: bool = False
    reasoning_evals: bool = False
    subject: str | None = None
    variant: str | None = None  # the merge-base wheel's variant (cpu, cu129, cu130); default by platform
    install_baseline: Path | None = None
    name: str | None = None
    max_model_len: int | None = None


def gpus_here() -> ip.Gpus:
    """Count, model and memory of this machine's GPUs through NVML (byog.images.fingerprint)."""
    found = gpu_fingerprint()
    if not found.get("available") or not found.get("count"):
        return ip.Gpus(0)
    first = found["gpus"][0]
    return ip.Gpus(int(found["count"]), str(first["name"]), int(first["memory_total_bytes"]))


def parse_switch(items: tuple[str, ...]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs as --additional-config keys; a value that is JSON (true, 3, "x") is read as JSON."""
    switch: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--switch {item!r}: write KEY=VALUE (e.g. --switch decode_backend=latency_specialized)")
        try:
            switch[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            switch[key.strip()] = value
    return switch


def probe_vllm(python: str) -> dict[str, Any]:
    """The vLLM that ``python`` imports, as the identity probe reports it there ({} when it does not answer)."""
    try:
        done = subprocess.run(
            identity_probe.probe_argv(python, None, None, None), capture_output=True, text=True, timeout=120
        )
        found = json.loads(done.stdout or "{}").get("vllm") or {}
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError):
        return {}
    return found if isinstance(found, dict) else {}


def editable_source(python: str) -> Path | None:
    """The source directory of the vLLM that ``python`` imports when it is an editable install (PEP 610
    ``direct_url.json``: a file URL), asked of that interpreter; else None."""
    url = probe_vllm(python).get("direct_url")
    if not isinstance(url, str) or not url.startswith("file://"):
        return None
    return Path(unquote(urlsplit(url).path))


def release_distance(python: str, checkout: Path | None) -> str | None:
    """The distance line of a baseline that is the vLLM ``python`` imports, from the candidate's merge base."""
    if checkout is None:
        return None
    found = probe_vllm(python)
    version, commit = found.get("version"), found.get("commit")
    base = mb.merge_base(checkout)
    if isinstance(commit, str) and commit:
        named = f"vllm {version} @ {commit[:7]}"
    elif isinstance(version, str):
        commit, named = mb.release_commit(checkout, version.split("+", 1)[0]), f"vllm {version}"
    else:
        return mb.distance_line("(no vLLM found)", None, base, None)
    behind = mb.commits_between(checkout, commit, base.commit) if commit and base.commit else None
    return mb.distance_line(named, commit, base, behind)


def _checkout(req: InitRequest) -> Path | None:
    if req.checkout is not None:
        return req.checkout
    if req.candidate.kind in ("python", "installed"):
        return editable_source(req.candidate.value if req.candidate.kind == "python" else sys.executable)
    return None


def _variant(req: InitRequest, gpus: ip.Gpus) -> str | None:
    """The wheel variant: as asked, ``cpu`` on a machine without GPUs, else the default (CUDA) one."""
    return req.variant if req.variant else (None if gpus.count else "cpu")


def resolve_baseline(req: InitRequest, gpus: ip.Gpus) -> ip.Baseline:
    """The baseline build and how it is obtained; the merge-base wheel's by default."""
    given = req.baseline
    if given is not None and given.kind == "flags":
        # the candidate's own build launched with other flags: a flags candidate's build is the one beside byog
        same = req.candidate if req.candidate.kind in ("python", "image", "wheel") else ip.Build("installed")
        how = f"the candidate's build launched with {given.value} (not stock)"
        return ip.Baseline(same, how, stock=False, args=given.value.split())
    if given is not None and given.kind != "merge-base":
        how = {
            "installed": "stock vLLM as installed beside byog (its version is in the server record)",
            "python": f"the Python environment {given.value}",
            "image": f"the image {given.value}",
            "endpoint": f"the running server at {given.value}",
        }[given.kind]
        python = {"installed": sys.executable, "python": given.value}.get(given.kind)
        distance = release_distance(python, _checkout(req)) if python else None
        return ip.Baseline(given, how, distance=distance)
    checkout = _checkout(req)
    base = mb.merge_base(checkout) if checkout is not None else None
    if base is None or base.commit is None:
        why = base.why_unknown if base is not None else "the candidate names no git checkout (--checkout DIR)"
        how = f"stock vLLM at the PR's merge base, which is unknown ({why}): set it by hand"
        placeholder = "<SET-ME: a Python environment with stock vLLM at your PR's merge base>"
        return ip.Baseline(_baseline_build(req, placeholder), how)
    variant = _variant(req, gpus)
    index = mb.wheel_index(base.commit, variant)
    how = (
        f"stock vLLM at the PR's merge base {base.short} ({base.upstream_ref} in {base.checkout}), the precompiled "
        f"wheel vLLM publishes for that commit: pip install vllm --extra-index-url {index}"
    )
    if req.install_baseline is not None:
        installed = mb.install_baseline(req.install_baseline, base.commit, variant)
        return ip.Baseline(
            _baseline_build(req, str(installed)),
            how,
            commit=base.commit,
            distance=f"baseline = merge base {base.short}",
        )
    placeholder = f"<SET-ME: a venv with vLLM {base.short}: byog init --install-baseline DIR, or pip as above>"
    return ip.Baseline(
        _baseline_build(req, placeholder), how, commit=base.commit, distance=f"baseline = merge base {base.short}"
    )


def _baseline_build(req: InitRequest, python: str) -> ip.Build:
    """The merge base in the candidate's kind of runtime: a Python environment, or an image for an image candidate."""
    if req.candidate.kind in ("image", "wheel"):
        return ip.Build(
            "image", "<SET-ME: the stock eval image at the merge base: byog image build --vllm-wheel WHEEL>"
        )
    return ip.Build("python", python)


@dataclass(frozen=True)
class ModelFacts:
    config: dict[str, Any] | None
    weights_bytes: int | None


def model_facts(model: str) -> ModelFacts:
    """The model's config.json and weight bytes where they are readable here (a local folder, the built-in)."""
    folder = model_config_dir(ModelSpec(path=model))
    if folder is None:
        return ModelFacts(None, None)
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        config = None
    return ModelFacts(config if isinstance(config, dict) else None, weights_bytes(str(folder)))


def choose_tp(req: InitRequest, gpus: ip.Gpus, facts: ModelFacts, tokens: int, batch: int) -> tuple[int, str]:
    """The TP size and why: as asked, else the smallest that fits the weights and leaves KV room."""
    if gpus.count == 0:
        return 1, "the CPU build runs one process"
    heads = None
    shape = None
    if facts.config is not None:
        text = facts.config.get("text_config") or facts.config
        heads = text.get("num_attention_heads") if isinstance(text, dict) else None
        try:
            shape = kv_shape(facts.config)
        except (KeyError, TypeError, ValueError):
            shape = None
    fits = ip.tp_choices(facts.weights_bytes, gpus, heads if isinstance(heads, int) else None, shape, tokens, batch)
    said = f"fitting choices {fits}" if facts.weights_bytes else "weights not readable here: no fit checked"
    if req.tp is not None:
        if facts.weights_bytes and req.tp not in fits:
            raise UsageError(
                f"--tp {req.tp} does not fit the weights with KV room on {gpus.said} (fitting: {fits or 'none'})"
            )
        return req.tp, f"as asked ({said})"
    if not fits:
        weights = f"{facts.weights_bytes / 2**30:.0f} GiB of weights" if facts.weights_bytes else "the model"
        raise UsageError(
            f"no TP size up to {gpus.count} fits {weights} with KV room on {gpus.said}: use a machine with more "
            "GPU memory, or pass --tp"
        )
    return fits[0], f"the smallest that fits the weights and leaves KV room for B={batch} ({said})"


def check_inputs(req: InitRequest) -> None:
    """Refuse, before anything is written, what no plan can use: an unknown model folder, a Python environment
    that is not there, a PR reference that is not OWNER/REPO#N."""
    check_model_reference(ModelSpec(path=req.model), where="--model")
    if req.subject is not None:
        try:
            BundleSubject.parse(req.subject)
        except ValueError as err:
            raise UsageError(f"--for: {err}") from None
    for flag, build in (("--candidate", req.candidate), ("--baseline", req.baseline)):
        if build is not None and build.kind == "python" and not Path(build.value).expanduser().exists():
            raise UsageError(f"{flag} python:{build.value}: no such interpreter or venv; name an existing one")


def answers(req: InitRequest) -> ip.InitAnswers:
    """The answers with every default resolved."""
    check_inputs(req)
    gpus = gpus_here()
    cpu = gpus.count == 0
    isl = req.isl or (ip.CPU_ISL if cpu else ip.GPU_ISL)
    osl = req.osl or (ip.CPU_OSL if cpu else ip.GPU_OSL)
    batches = list(req.batch_sizes) or (ip.CPU_BATCHES if cpu else ip.GPU_BATCHES)
    facts = model_facts(req.model)
    tp, tp_why = choose_tp(req, gpus, facts, isl + osl, max(batches))
    max_len = req.max_model_len or (CPU_MAX_MODEL_LEN if cpu else None)
    if req.long_context and max_len is None:
        max_len = max(ip.LONG_CONTEXT_ISL[-1] + osl, ip.evals_context(req.reasoning_evals))
    name = req.name or ("init-" + Path(req.model).name.lower().replace(":", "-"))
    return ip.InitAnswers(
        name=name,
        model=req.model,
        candidate=req.candidate,
        baseline=resolve_baseline(req, gpus),
        gpus=gpus,
        tp=tp,
        tp_why=tp_why,
        switch=parse_switch(req.switch),
        batch_sizes=batches,
        isl=isl,
        osl=osl,
        long_context=req.long_context,
        reasoning_evals=req.reasoning_evals,
        subject=req.subject,
        max_model_len=max_len,
    )


def write_plan(req: InitRequest, out: Path, force: bool) -> tuple[Plan, ip.InitAnswers]:
    """Write the plan for ``req`` to ``out`` (refusing an existing file without ``force``) once it loads."""
    if out.exists() and not force:
        raise UsageError(f"{out} exists: byog init writes nothing over it without --force")
    resolved = answers(req)
    text = ip.plan_yaml(resolved)
    plan = parse_plan(text, str(out))  # the same checks `byog plan` makes: a plan init writes always loads
    check_plan_fits(plan)  # and fits its own context (every point, every eval's prompts + answers)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, text)
    return plan, resolved
