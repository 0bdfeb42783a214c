"""The numerics differential and the conformance suite on one launched server (``byog run``,
``byog check numerics``, ``byog check conformance``).

Order matters: a candidate sends exactly its baseline's prompts (read from the baseline's
record), and its longest-prompt check asks for the baseline's longest, so every baseline runs
before its candidates (``server_order``). A baseline runs two passes (``alone``: one request
at a time, the reference; ``together``: every request at once, the A/A side) and the plain
decode yardstick; a candidate runs ``together``. Files: ``byog.core.paths.RunDir``
(numerics/, conformance/).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from byog.analysis.numerics import PassArrays, head_ratio
from byog.analysis.numerics_summary import REFERENCE_PASS, load_pass, read_conformance_record, read_numerics_record
from byog.bench.prompts import ServerTokenizer, build_prompts
from byog.core.errors import UsageError
from byog.core.io import atomic_write_json
from byog.core.paths import RunDir
from byog.core.reporter import Reporter
from byog.correctness.conformance import run_conformance
from byog.correctness.differential import TokenPath, plain_decode_wall_s, run_pass
from byog.correctness.prompts import NamedPrompt, build_prompt_set
from byog.plans.numerics_roles import derived_servers, stock_roles
from byog.schemas.numerics import (
    ConformanceCheck,
    ConformanceRecord,
    NumericsRecord,
    PassInfo,
    PassName,
    PromptInfo,
    write_numerics_rows,
)
from byog.schemas.plan import NumericsSpec, Plan
from byog.schemas.server import Endpoint

BASELINE_PASSES: tuple[PassName, ...] = ("alone", "together")
CANDIDATE_PASSES: tuple[PassName, ...] = ("together",)


def references(plan: Plan) -> dict[str, str]:
    """server -> the server whose token path it is scored on: a baseline itself, a candidate, control or
    envelope variant its baseline."""
    refs = {baseline: baseline for _, baseline in plan.comparisons}
    refs.update({candidate: baseline for candidate, baseline in plan.comparisons})
    for role in stock_roles(plan).values():
        for name in (role.control, role.variant):
            if name is not None:
                refs.setdefault(name, role.baseline)
    return refs


def server_order(plan: Plan, numerics: bool | None = None) -> list[str]:
    """The servers to launch; with numerics (default: when the plan has a numerics section) each
    baseline of a comparison first, then the controls and envelope variants byog derives, then the
    rest in plan order; otherwise the plan's servers in plan order."""
    with_numerics = plan.numerics is not None if numerics is None else numerics
    refs = references(plan) if with_numerics else {}
    first = [s for s in plan.servers if refs.get(s, s) == s]
    derived = list(derived_servers(plan)) if with_numerics else []
    return first + derived + [s for s in plan.servers if s not in first]


def baseline_is_flat(plan: Plan, baseline: str, rd: RunDir) -> bool:
    """The baseline's reference pass shows flat next-token distributions: no other server has anything to show."""
    if not rd.numerics_complete(baseline):
        return False
    tolerance = (plan.numerics or NumericsSpec()).tolerance
    ratio = head_ratio(PassArrays.concat(list(load_pass(rd, baseline, REFERENCE_PASS).values())))
    return ratio is not None and ratio <= tolerance.flat_head_ratio


def skipped_as_insensitive(plan: Plan, server: str, rd: RunDir) -> bool:
    """A control, variant or candidate whose baseline is flat: its numerics would be no evidence."""
    reference = references(plan).get(server, server)
    return reference != server and baseline_is_flat(plan, reference, rd)


def runs_conformance(plan: Plan, server: str) -> bool:
    """The plan asks for the conformance suite on this server: a plan server of a comparison (listed, given a list)."""
    wanted = plan.numerics.conformance if plan.numerics is not None else True
    listed = server in wanted if isinstance(wanted, list) else wanted
    return bool(listed) and server in plan.servers and server in references(plan)


def numerics_done(plan: Plan, server: str, rd: RunDir) -> bool:
    """Nothing of the numerics section left to run on this server."""
    if plan.numerics is None or server not in references(plan):
        return True
    if skipped_as_insensitive(plan, server, rd):
        return True
    conformance_done = not runs_conformance(plan, server) or rd.conformance_record(server).is_file()
    return rd.numerics_complete(server) and conformance_done


def _prompt_builder(
    spec: NumericsSpec, endpoint: Endpoint, data_dir: Path | None, tok: ServerTokenizer
) -> Callable[..., list[list[int]]]:
    def build(*, kind: Literal["random", "dataset"], isl: int, count: int, point_id: str) -> list[list[int]]:
        found = build_prompts(
            kind=kind,
            dataset=spec.dataset if kind == "dataset" else None,
            api="completions",
            isl=isl,
            count=count,
            seed=spec.seed,
            point_id=point_id,
            server=tok,
            tokenizer_path=endpoint.tokenizer,
            data_dir=data_dir,
        )
        return [list(p.body) for p in found]

    return build


def _timed_pass(
    rd: RunDir,
    server: str,
    name: PassName,
    endpoint: Endpoint,
    prompts: list[TokenPath],
    spec: NumericsSpec,
    reporter: Reporter,
) -> PassInfo:
    with reporter.status(f": numerics pass '{name}' ({len(prompts)} prompts)…", lead=server):
        started = time.monotonic()
        rows = run_pass(
            endpoint.base_url, endpoint.model, prompts, k=spec.top_k, max_tokens=spec.max_tokens, composition=name
        )
        wall_s = time.monotonic() - started
    write_numerics_rows(rd.numerics_rows(server, name), rows)
    return PassInfo(name=name, requests=len(prompts), positions=len(rows), wall_s=round(wall_s, 3))


def run_numerics(
    plan: Plan, server: str, endpoint: Endpoint, rd: RunDir, data_dir: Path | None, reporter: Reporter
) -> None:
    """Every pass of this server's role; the record last. Skipped when already complete."""
    spec = plan.numerics or NumericsSpec()
    reference = references(plan).get(server)
    if reference is None or rd.numerics_complete(server):
        return
    plain_s: float | None = None
    if reference == server:
        tok = ServerTokenizer(endpoint.base_url, endpoint.model)
        try:
            named: list[NamedPrompt] = build_prompt_set(spec, _prompt_builder(spec, endpoint, data_dir, tok))
        finally:
            tok.close()
        infos = [PromptInfo(prompt=p.path.prompt_id, kind=p.kind, ids=p.path.ids) for p in named]
        names = BASELINE_PASSES
    else:
        if not rd.numerics_complete(reference):
            raise UsageError(
                f"numerics: '{server}' sends its baseline '{reference}''s prompts; run '{reference}' first"
            )
        infos = read_numerics_record(rd, reference).prompts
        names = CANDIDATE_PASSES
    prompts = [TokenPath(p.prompt, list(p.ids)) for p in infos]
    # one short request first, so the first pass measures a warm server
    run_pass(endpoint.base_url, endpoint.model, prompts[:1], k=spec.top_k, max_tokens=1, composition="alone")
    passes = [_timed_pass(rd, server, name, endpoint, prompts, spec, reporter) for name in names]
    if reference == server:
        plain_s = round(plain_decode_wall_s(endpoint.base_url, endpoint.model, prompts, max_tokens=spec.max_tokens), 3)
    record = NumericsRecord(
        server=server,
        reference=reference,
        top_k=spec.top_k,
        max_tokens=spec.max_tokens,
        prompts=infos,
        passes=passes,
        plain_decode_wall_s=plain_s,
    )
    atomic_write_json(rd.numerics_record(server), record.model_dump(mode="json"))
    reporter.line(
        f": numerics passes done in {sum(p.wall_s for p in passes):.1f} s "
        f"({sum(p.positions for p in passes)} positions)"
        + (f"; the same tokens without logprobs: {plain_s:.1f} s" if plain_s is not None else ""),
        lead=server,
    )


def run_conformance_checks(plan: Plan, server: str, endpoint: Endpoint, rd: RunDir, reporter: Reporter) -> None:
    """The conformance suite on this server; a candidate must accept its baseline's longest prompt."""
    reference = references(plan).get(server, server)
    if rd.conformance_record(server).is_file():
        return
    longest: int | None = None
    if reference != server:
        if not rd.conformance_record(reference).is_file():
            raise UsageError(f"conformance: run the baseline '{reference}' before its candidate '{server}'")
        for check in read_conformance_record(rd, reference).checks:
            if check.check == "longest_prompt_accepted" and check.passed:
                longest = int(check.detail["prompt_tokens"])
    seed = plan.numerics.seed if plan.numerics is not None else 0
    with reporter.status(": conformance checks…", lead=server):
        started = time.monotonic()
        records = run_conformance(endpoint.base_url, endpoint.model, longest_prompt=longest, seed=seed)
        wall_s = time.monotonic() - started
    record = ConformanceRecord(
        server=server, longest_prompt=longest, checks=[ConformanceCheck(**r) for r in records], wall_s=round(wall_s, 3)
    )
    atomic_write_json(rd.conformance_record(server), record.model_dump(mode="json"))
    failed = [c for c in record.checks if not c.passed]
    reporter.line(f": conformance {len(record.checks) - len(failed)}/{len(record.checks)} passed", lead=server)
    for c in failed:
        reporter.line(f": {c.reason}", lead=f"  ✗ {c.check}", style="error")


def run_numerics_for_server(
    plan: Plan,
    server: str,
    endpoint: Endpoint,
    rd: RunDir,
    data_dir: Path | None,
    reporter: Reporter,
    *,
    numerics: bool = True,
    conformance: bool = True,
) -> None:
    """What ``byog run`` calls for each launched server when the plan has a numerics section."""
    if server not in references(plan) or skipped_as_insensitive(plan, server, rd):
        return
    if numerics:
        run_numerics(plan, server, endpoint, rd, data_dir, reporter)
    if conformance and runs_conformance(plan, server):
        run_conformance_checks(plan, server, endpoint, rd, reporter)
