"""Policy: what a maintainer requires of every bundle (byog.schemas.policy documents the file)."""

from __future__ import annotations

import io
from typing import Any

from byog.bundles.checks.base import Skipped, VerifyContext, check
from byog.bundles.checks.recompute import _derive
from byog.bundles.points import describe, one_point, point_id
from byog.errors import CheckFailed

_WARMUP_COLUMNS = ("warmup", "is_warmup")
_ITEM_ID_COLUMNS = ("item_id", "doc_id", "id")


def _digest_of(reference: str) -> str:
    return reference.rsplit("@", 1)[-1]


def _measured_requests(ctx: VerifyContext, server: str, pid: str) -> int:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(ctx.read(f"bench/{server}/{pid}.parquet")))
    for column in _WARMUP_COLUMNS:
        if column in table.column_names:
            return int(table.num_rows - pc.sum(pc.cast(table[column], "int64")).as_py() or 0)
    return table.num_rows


def _eval_items(ctx: VerifyContext, server: str, task: str) -> int:
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(ctx.read(f"evals/{server}/{task}/items.parquet")))
    for column in _ITEM_ID_COLUMNS:
        if column in table.column_names:
            return len(set(table[column].to_pylist()))
    return table.num_rows


def _check_images(ctx: VerifyContext, allowed: list[str]) -> None:
    assert ctx.statement is not None
    allowed_digests = {_digest_of(a) for a in allowed}
    for server in ctx.statement.predicate.servers:
        ran = {_digest_of(d) for d in server.image_digests} | ({_digest_of(server.image_id)} if server.image_id else set())
        if not ran:
            raise CheckFailed(f"server '{server.name}' ran no image pinned by digest, but the policy allows only {', '.join(sorted(allowed_digests))}")
        if not ran & allowed_digests:
            raise CheckFailed(f"server '{server.name}' ran image {', '.join(sorted(ran))}, which the policy does not allow")


@check("policy", requires=("schemas",))
def meets_policy(ctx: VerifyContext) -> str:
    policy = ctx.policy
    if policy is None:
        raise Skipped("no --policy given")
    if ctx.statement is None:
        raise CheckFailed("not checked: the manifest could not be read")
    summary: dict[str, Any] = _derive(ctx)
    if policy.allowed_image_digests is not None:
        _check_images(ctx, policy.allowed_image_digests)
    for required in policy.required_points:
        try:
            one_point(summary, required.server, point=required.point, select=required.select)
        except CheckFailed:
            raise CheckFailed(f"required point {describe(required.server, required.point, required.select)} is not in the bundle") from None
    verdicts = summary.get("evals", {}).get("verdicts", [])
    candidates = summary.get("plan", {}).get("candidates", [])
    for task in policy.required_tasks:
        for candidate in candidates:
            if not any(v.get("task") == task and v.get("candidate") == candidate for v in verdicts):
                raise CheckFailed(f"required task '{task}' has no verdict for '{candidate}'")
    points = summary.get("bench", {}).get("points", [])
    if policy.require_valid_points:
        invalid = [f"{p.get('server')}/{point_id(p)}" for p in points if p.get("valid") is False]
        if invalid:
            raise CheckFailed(f"{len(invalid)} point(s) are flagged invalid: {', '.join(invalid[:5])}")
    if policy.min_samples.requests:
        for point in points:
            n = _measured_requests(ctx, str(point.get("server")), point_id(point))
            if n < policy.min_samples.requests:
                raise CheckFailed(f"point {point.get('server')}/{point_id(point)} measured {n} requests, fewer than the policy's {policy.min_samples.requests}")
    if policy.min_samples.eval_items:
        run_dir = ctx.run_dir
        for server in run_dir.eval_servers():
            for task in run_dir.eval_tasks(server):
                n = _eval_items(ctx, server, task)
                if n < policy.min_samples.eval_items:
                    raise CheckFailed(f"eval {server}/{task} scored {n} items, fewer than the policy's {policy.min_samples.eval_items}")
    return "meets the policy"
