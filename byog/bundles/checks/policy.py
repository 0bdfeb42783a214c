"""Policy: what a maintainer requires of every bundle (byog.schemas.policy documents the file).

No requirement is met vacuously: required tasks with no candidate in the bundle, minimum request
counts or "no invalid points" with no bench point, or minimum eval items with no eval each fail,
naming what is missing.
"""

from __future__ import annotations

from byog.analysis.points import describe, one_point
from byog.bundles.checks.base import Skipped, VerifyContext, check
from byog.bundles.checks.recompute import derived_summary
from byog.core.errors import CheckFailed
from byog.schemas.policy import Policy
from byog.schemas.summary import Summary


def _digest_of(reference: str) -> str:
    return reference.rsplit("@", 1)[-1]


def _check_images(ctx: VerifyContext, allowed: list[str]) -> None:
    assert ctx.statement is not None
    allowed_digests = {_digest_of(a) for a in allowed}
    for server in ctx.statement.predicate.servers:
        ran = {_digest_of(d) for d in server.image_digests} | (
            {_digest_of(server.image_id)} if server.image_id else set()
        )
        if not ran:
            raise CheckFailed(
                f"server '{server.name}' ran no image pinned by digest, but the policy allows only "
                f"{', '.join(sorted(allowed_digests))}"
            )
        if not ran & allowed_digests:
            raise CheckFailed(
                f"server '{server.name}' ran image {', '.join(sorted(ran))}, which the policy does not allow"
            )


@check("policy", requires=("schemas",))
def meets_policy(ctx: VerifyContext) -> str:
    policy = ctx.policy
    if policy is None:
        raise Skipped("no --policy given")
    if ctx.statement is None:
        raise CheckFailed("not checked: the manifest could not be read")
    summary = derived_summary(ctx)
    if policy.allowed_image_digests is not None:
        _check_images(ctx, policy.allowed_image_digests)
    _check_required_points(policy, summary)
    _check_verdicts(policy, summary)
    _check_bench_points(policy, summary)
    _check_eval_items(policy, summary)
    return "meets the policy"


def _check_required_points(policy: Policy, summary: Summary) -> None:
    for required in policy.required_points:
        try:
            one_point(summary, required.server, point=required.point, select=required.select)
        except CheckFailed:
            raise CheckFailed(
                f"required point {describe(required.server, required.point, required.select)} is not in the bundle"
            ) from None


def _check_verdicts(policy: Policy, summary: Summary) -> None:
    verdicts = summary.evals.verdicts
    if policy.required_tasks and not summary.plan.candidates:
        raise CheckFailed(
            f"the policy requires verdicts for {', '.join(policy.required_tasks)}, but the bundle has no candidate to "
            "judge"
        )
    for task in policy.required_tasks:
        for candidate in summary.plan.candidates:
            if not any(v.task == task and v.candidate == candidate for v in verdicts):
                raise CheckFailed(f"required task '{task}' has no verdict for '{candidate}'")
    if policy.forbid_degenerate:
        named = [
            f"{v.task} {v.candidate} vs {v.baseline} ({', '.join(v.degenerate)})" for v in verdicts if v.degenerate
        ]
        if named:
            raise CheckFailed(
                f"{len(named)} verdict(s) are degenerate, which the policy forbids: {'; '.join(named[:5])}"
            )
    if policy.forbid_screening:
        named = [f"{v.task} {v.candidate} vs {v.baseline}" for v in verdicts if v.screening]
        if named:
            raise CheckFailed(
                f"{len(named)} verdict(s) come from a design that cannot keep the gate sound (screening), "
                f"which the policy forbids: {'; '.join(named[:5])}"
            )


def _check_bench_points(policy: Policy, summary: Summary) -> None:
    points = summary.bench.points
    if (policy.require_valid_points or policy.min_samples.requests) and not points:
        raise CheckFailed("the policy sets requirements on bench points, but the bundle has none")
    if policy.require_valid_points:
        invalid = [f"{p.server}/{p.point_id}" for p in points if not p.valid]
        if invalid:
            raise CheckFailed(f"{len(invalid)} point(s) are flagged invalid: {', '.join(invalid[:5])}")
    if policy.min_samples.requests:
        for point in points:
            n = point.n_requests  # measured (non-warm-up) requests, recomputed from the rows
            if n < policy.min_samples.requests:
                raise CheckFailed(
                    f"point {point.server}/{point.point_id} measured {n} requests, fewer than the policy's "
                    f"{policy.min_samples.requests}"
                )


def _check_eval_items(policy: Policy, summary: Summary) -> None:
    if not policy.min_samples.eval_items:
        return
    scores = summary.evals.scores  # one per (server, task), n_items recomputed from items.parquet
    if not scores:
        raise CheckFailed(
            f"the policy requires at least {policy.min_samples.eval_items} items per eval, but the bundle has no eval"
        )
    for score in scores:
        if score.n_items < policy.min_samples.eval_items:
            raise CheckFailed(
                f"eval {score.server}/{score.task} scored {score.n_items} items, fewer than the policy's "
                f"{policy.min_samples.eval_items}"
            )
