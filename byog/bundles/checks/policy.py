"""Policy: what a maintainer requires of every bundle (byog.schemas.policy documents the file).

No requirement is met vacuously: required tasks with no candidate in the bundle, minimum request
counts or "no invalid points" with no bench point, or minimum eval items with no eval each fail,
naming what is missing.
"""

from __future__ import annotations

from byog.analysis.points import describe, one_point
from byog.bundles.checks.base import Found, Skipped, VerifyContext, check, counted
from byog.bundles.checks.recompute import derived_summary
from byog.core.errors import CheckFailed
from byog.schemas.policy import Policy
from byog.schemas.summary import Summary


def _digest_of(reference: str) -> str:
    return reference.rsplit("@", 1)[-1]


def _check_images(ctx: VerifyContext, allowed: list[str]) -> list[str]:
    assert ctx.statement is not None
    allowed_digests = {_digest_of(a) for a in allowed}
    failures = []
    for server in ctx.statement.predicate.servers:
        ran = {_digest_of(d) for d in server.image_digests} | (
            {_digest_of(server.image_id)} if server.image_id else set()
        )
        if not ran:
            failures.append(
                f"server '{server.name}' ran no image pinned by digest, but the policy allows only "
                f"{', '.join(sorted(allowed_digests))}"
            )
        elif not ran & allowed_digests:
            failures.append(
                f"server '{server.name}' ran image {', '.join(sorted(ran))}, which the policy does not allow"
            )
    return failures


@check("policy", requires=("schemas",))
def meets_policy(ctx: VerifyContext) -> Found:
    """Every requirement is checked and every one not met is named (``details["failed"]``), none
    hidden behind the first."""
    policy = ctx.policy
    if policy is None:
        raise Skipped("no --policy given")
    if ctx.statement is None:
        raise CheckFailed("not checked: the manifest could not be read")
    summary = derived_summary(ctx)
    failures = _check_images(ctx, policy.allowed_image_digests) if policy.allowed_image_digests is not None else []
    failures += _check_required_points(policy, summary)
    failures += _check_verdicts(policy, summary)
    failures += _check_bench_points(policy, summary)
    failures += _check_eval_items(policy, summary)
    if failures:
        return Found(counted(failures, "policy requirements not met"), failed=True, details={"failed": failures})
    return Found("meets the policy", details={"failed": []})


def _check_required_points(policy: Policy, summary: Summary) -> list[str]:
    failures = []
    for required in policy.required_points:
        try:
            one_point(summary, required.server, point=required.point, select=required.select)
        except CheckFailed:
            failures.append(
                f"required point {describe(required.server, required.point, required.select)} is not in the bundle"
            )
    return failures


def _check_verdicts(policy: Policy, summary: Summary) -> list[str]:
    verdicts = summary.evals.verdicts
    if policy.required_tasks and not summary.plan.candidates:
        return [
            f"the policy requires verdicts for {', '.join(policy.required_tasks)}, but the bundle has no candidate to "
            "judge"
        ]
    failures = [
        f"required task '{task}' has no verdict for '{candidate}'"
        for task in policy.required_tasks
        for candidate in summary.plan.candidates
        if not any(v.task == task and v.candidate == candidate for v in verdicts)
    ]
    if policy.forbid_degenerate:
        failures += [
            f"verdict {v.task} {v.candidate} vs {v.baseline} is degenerate ({', '.join(v.degenerate)}), which the "
            "policy forbids"
            for v in verdicts
            if v.degenerate
        ]
    if policy.forbid_screening:
        failures += [
            f"verdict {v.task} {v.candidate} vs {v.baseline} comes from a design that cannot keep the gate sound "
            "(screening), which the policy forbids"
            for v in verdicts
            if v.screening
        ]
    return failures


def _check_bench_points(policy: Policy, summary: Summary) -> list[str]:
    points = summary.bench.points
    if (policy.require_valid_points or policy.min_samples.requests) and not points:
        return ["the policy sets requirements on bench points, but the bundle has none"]
    failures = []
    if policy.require_valid_points:
        failures += [
            f"point {p.server}/{p.point_id} is flagged invalid ({'; '.join(p.invalid_reasons) or 'no reason recorded'})"
            for p in points
            if not p.valid
        ]
    if policy.min_samples.requests:
        failures += [
            f"point {p.server}/{p.point_id} measured {p.n_requests} requests, fewer than the policy's "
            f"{policy.min_samples.requests}"
            for p in points  # measured (non-warm-up) requests, recomputed from the rows
            if p.n_requests < policy.min_samples.requests
        ]
    return failures


def _check_eval_items(policy: Policy, summary: Summary) -> list[str]:
    if not policy.min_samples.eval_items:
        return []
    scores = summary.evals.scores  # one per (server, task), n_items recomputed from items.parquet
    if not scores:
        return [
            f"the policy requires at least {policy.min_samples.eval_items} items per eval, but the bundle has no eval"
        ]
    return [
        f"eval {score.server}/{score.task} scored {score.n_items} items, fewer than the policy's "
        f"{policy.min_samples.eval_items}"
        for score in scores
        if score.n_items < policy.min_samples.eval_items
    ]
