"""Bounds: the first content check. Every file within its kind's size cap, every JSON and YAML
document parsed within depth and number limits (YAML without anchors or aliases), every parquet
file's rows and decompressed sizes within caps from its footer, string cells within their cap,
and the plan's point count within its cap (``byog.bundles.bounds`` has the numbers and why).

The parsed documents are kept on the context, so later checks never parse a file twice.
"""

from __future__ import annotations

from byog.bundles.bounds import (
    MiB,
    check_parquet,
    check_parquet_cells,
    check_plan_points,
    check_size,
    load_json,
    load_yaml,
)
from byog.bundles.checks.base import VerifyContext, check
from byog.core.errors import CheckFailed


@check("bounds", requires=("hashes",))
def within_bounds(ctx: VerifyContext) -> str:
    caps = ctx.caps
    points = sum(1 for name in ctx.names if name.startswith("bench/") and name.endswith(".parquet"))
    if points > caps.max_bench_points:
        raise CheckFailed(f"the bundle holds {points:,} bench points, over the cap of {caps.max_bench_points:,}")
    documents_bytes = 0
    for name in ctx.names:
        size = (ctx.root / name).stat().st_size
        check_size(name, size)
        documents_bytes += size if name.endswith((".json", ".yaml", ".yml")) else 0
    if documents_bytes > caps.max_document_bytes:
        raise CheckFailed(
            f"the bundle's JSON and YAML files add up to {documents_bytes / MiB:.0f} MiB, "
            f"over the cap of {caps.max_document_bytes // MiB} MiB"
        )
    documents = 0
    for name in ctx.names:
        if name.endswith(".json"):
            ctx.parsed[name] = load_json(ctx.read(name), name, caps)
            documents += 1
        elif name.endswith((".yaml", ".yml")):
            ctx.parsed[name] = load_yaml(ctx.read(name), name, caps)
            documents += 1
    rows = decoded = tables = 0
    for name in ctx.names:
        if not name.endswith(".parquet"):
            continue
        shape = check_parquet(ctx.root / name, name, caps)
        rows += shape.rows
        decoded += shape.decoded_bytes
        if rows > caps.max_total_rows:
            raise CheckFailed(f"the bundle's parquet files hold more than {caps.max_total_rows:,} rows in all")
        if decoded > caps.max_total_decoded_bytes:
            raise CheckFailed(
                f"the bundle's parquet files decompress to more than {caps.max_total_decoded_bytes // 2**20} MiB in all"
            )
        check_parquet_cells(ctx.root / name, name, caps)
        tables += 1
    plan_points = check_plan_points(ctx.parsed.get("plan.yaml"), caps)
    return (
        f"{len(ctx.names)} files within their size caps; {documents} JSON/YAML documents and {tables} parquet files "
        f"({rows:,} rows) within their limits; the plan expands to {plan_points} points"
    )
