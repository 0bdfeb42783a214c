"""Claims by the front door: ``byog run --claims FILE`` and ``byog bundle pack --claims FILE``.

The claims a bundle signs are the run directory's ``claims.yaml`` plus the file given. Before
anything is signed each claim must name something the run measured: a value or ratio claim
exactly one point of each server it names, a verdict claim a (task, candidate) with a verdict.
A claim that matches nothing is refused, with the nearest points it could have meant; verify
would only fail it later, after the bundle was signed and sent.

A claim given twice (the file repeats one already in ``claims.yaml``) is merged, with a note;
two different claims under one name are refused: a reader could not tell which one held.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from byog.analysis.claims import claim_label
from byog.analysis.points import describe, find_points
from byog.bundles.bounds import CAPS, load_yaml
from byog.core.errors import CheckFailed, PlanProblems, UsageError
from byog.core.io import atomic_write_text
from byog.core.paths import CLAIMS_NAME, RunDir
from byog.plans.expand import expand_plan
from byog.plans.load import did_you_mean, validation_problems
from byog.schemas.claims import Claim, ClaimsFile, RatioClaim, ValueClaim, VerdictClaim
from byog.schemas.plan import Plan, RateWorkload
from byog.schemas.summary import Summary

NEAREST = 3
M = TypeVar("M", bound=BaseModel)


def load_yaml_model(path: Path | None, model: type[M], what: str) -> M | None:
    """A --policy or --claims file: bounded YAML (no alias bombs, finite numbers), then its model,
    every problem listed (an unknown key with the one it probably meant)."""
    if path is None:
        return None
    if path.is_dir() or not path.is_file():
        raise UsageError(f"{what} file {path} {'is a directory' if path.is_dir() else 'does not exist'}")
    if path.stat().st_size > CAPS.max_yaml_doc_bytes:
        raise UsageError(f"{what} file {path} is over {CAPS.max_yaml_doc_bytes // 2**20} MiB")
    try:
        doc = load_yaml(path.read_bytes(), str(path))
    except CheckFailed as err:
        raise UsageError(str(err)) from None
    try:
        return model.model_validate(doc)
    except ValidationError as err:
        raise PlanProblems(f"{what} file {path}", validation_problems(err, model)) from None


def read_claims_file(path: Path) -> list[Claim]:
    """A claims file as ``byog verify --claims`` reads it."""
    loaded = load_yaml_model(path, ClaimsFile, "claims")
    return list(loaded.claims) if loaded is not None else []


def _nearest(summary: Summary, server: str, point: str | None, select: dict[str, Any] | None) -> str:
    points = [p for p in summary.bench.points if p.server == server]
    if not points:
        servers = sorted({p.server for p in summary.bench.points})
        return f"server '{server}' has no points (servers with points: {', '.join(servers) or 'none'})"
    if point is not None:
        near = difflib.get_close_matches(point, [p.point_id for p in points], n=NEAREST, cutoff=0.0)
    else:
        wanted = select or {}

        def agreeing(p: Any) -> int:
            fields = p.model_dump(exclude={"metrics"})
            return sum(1 for key, value in wanted.items() if fields.get(key) == value)

        near = [p.point_id for p in sorted(points, key=agreeing, reverse=True)[:NEAREST]]
    return "nearest: " + ", ".join(near)


def match_problems(summary: Summary, claims: list[Claim]) -> list[str]:
    """Each claim that names no measured point (or several), or no verdict, with what is nearest."""
    problems = []
    for claim in claims:
        if claim.not_checked:
            continue
        label = claim_label(claim)
        if isinstance(claim, VerdictClaim):
            have = sorted({(v.task, v.candidate) for v in summary.evals.verdicts})
            if (claim.task, claim.candidate) not in have:
                listed = ", ".join(f"{t} on {c}" for t, c in have) or "none"
                problems.append(
                    f"claim '{label}': no verdict for {claim.task} on {claim.candidate} (verdicts: {listed})"
                )
            continue
        servers = [claim.server] if isinstance(claim, ValueClaim) else [claim.candidate, claim.baseline]
        for server in servers:
            found = find_points(summary, server, point=claim.point, select=claim.select)
            if len(found) == 1:
                continue
            what = "no point" if not found else f"{len(found)} points ({', '.join(p.point_id for p in found)})"
            near = f"; {_nearest(summary, server, claim.point, claim.select)}" if not found else ""
            problems.append(f"claim '{label}': {describe(server, claim.point, claim.select)} matches {what}{near}")
    return problems


def plan_claim_problems(plan: Plan, claims: list[Claim]) -> list[str]:
    """Before a run: each claim naming a server, point id or eval the plan does not have (selectors and a
    rate search's probes are matched after the run, against what was measured)."""
    problems = []
    points = {(server, p.point_id) for p in expand_plan(plan) for server in p.servers}
    tasks = {spec.task for spec in plan.evals}
    for claim in claims:
        label = claim_label(claim)
        if isinstance(claim, VerdictClaim):
            servers = [claim.candidate]
            if claim.task not in tasks:
                problems.append(
                    f"claim '{label}': the plan runs no eval '{claim.task}'{did_you_mean(claim.task, tasks)}"
                )
        else:
            servers = [claim.server] if isinstance(claim, ValueClaim) else [claim.candidate, claim.baseline]
        for server in servers:
            if server not in plan.servers:
                problems.append(
                    f"claim '{label}': no server '{server}' in the plan{did_you_mean(server, set(plan.servers))}"
                )
            elif isinstance(claim, ValueClaim | RatioClaim) and _unplanned(plan, points, server, claim.point):
                ids = {pid for s, pid in points if s == server}
                near = did_you_mean(claim.point or "", ids)
                problems.append(f"claim '{label}': {server} has no point '{claim.point}' in the plan{near}")
    return problems


def _unplanned(plan: Plan, points: set[tuple[str, str]], server: str, point: str | None) -> bool:
    """A point id the plan does not expand to (a rate search picks its points while running: not known before)."""
    searched = any(isinstance(w, RateWorkload) and w.search is not None for w in plan.workloads)
    return point is not None and not searched and (server, point) not in points


def _dump(claim: Claim) -> dict[str, Any]:
    return claim.model_dump(mode="json", exclude_none=True)


def merged(existing: list[Claim], added: list[Claim]) -> tuple[list[Claim], list[str], list[str]]:
    """(claims, notes, problems): a repeated claim merged with a note; one name for two claims refused."""
    claims, notes, problems = list(existing), [], []
    by_label = {claim_label(c): c for c in existing}
    for claim in added:
        label = claim_label(claim)
        same = by_label.get(label)
        if same is not None and _dump(same) == _dump(claim):
            notes.append(f"claim '{label}' is already in {CLAIMS_NAME}: merged into one")
        elif same is not None:
            problems.append(f"claim '{label}' is in {CLAIMS_NAME} and in the file with different content")
        else:
            claims.append(claim)
            by_label[label] = claim
    return claims, notes, problems


def run_claims(run_dir: RunDir) -> list[Claim]:
    path = run_dir.root / CLAIMS_NAME
    return read_claims_file(path) if path.is_file() else []


def take_claims(run_dir: RunDir, summary: Summary, added: Path | None) -> list[str]:
    """Check the claims this run's bundle will sign (and merge ``added`` into its claims.yaml); the notes.

    Raises ``PlanProblems`` listing every claim that names nothing measured, before anything is signed.
    """
    existing = run_claims(run_dir)
    new = read_claims_file(added) if added is not None else []
    claims, notes, problems = merged(existing, new)
    problems += match_problems(summary, claims)
    if problems:
        raise PlanProblems(f"claims for {run_dir.root}", problems, outcome="nothing signed")
    if len(claims) > len(existing):
        document = {"schema_version": 1, "claims": [_dump(c) for c in claims]}
        atomic_write_text(run_dir.root / CLAIMS_NAME, yaml.safe_dump(document, sort_keys=False))
    return notes
