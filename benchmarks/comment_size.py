"""How much the PR comment weighs for the largest built-in profile (GitHub caps a comment at 65,536
characters): a synthetic run directory of kimi-k3-gb300's full-tier shape (its servers, its batch
points on the servers each runs on, its eval tasks on every server), its report re-rendered and
laid out as the PR workflow's comment.

    python benchmarks/comment_size.py [--profile kimi-k3-gb300] [--out comment.md]

Agentic points are left out (the synthetic rows are batch rows), so the figure is the comment
without the agentic tables. Prints characters, bytes and lines of the whole comment and of its
first screen.
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path

from byog.analysis.summary import derive_summary
from byog.bundles.pr import comment_body
from byog.core.io import atomic_write_json, atomic_write_text
from byog.core.paths import RunDir
from byog.plans.expand import expand_plan
from byog.plans.load import parse_plan, resolve_plan_path
from byog.report.context import ReportInputs
from byog.report.markdown import render_report
from tests.support.synthetic import SyntheticSpec, synthetic_rows, write_eval_files, write_point

LIMIT = 65_536


def kimi_shaped_run(root: Path, profile: str) -> RunDir:
    label, text = resolve_plan_path(profile)
    plan = parse_plan(text, label)
    run_dir = RunDir(root)
    atomic_write_text(run_dir.plan_yaml, text)
    atomic_write_json(
        run_dir.env_json, {"schema_version": 1, "os": "Linux (synthetic)", "cpu": "synthetic", "gpus": []}
    )
    spec = SyntheticSpec(eval_items=40)
    rng = random.Random(spec.seed)
    for server in plan.servers:
        atomic_write_json(
            run_dir.server_record(server),
            {
                "name": server,
                "runtime": "docker",
                "argv": ["vllm", "serve", "kimi-k3", f"--served-model-name={server}"],
            },
        )
        tpot = spec.tpot_s / (spec.candidate_speedup if server.startswith("candidate") else 1.0)
        for point in expand_plan(plan):
            if point.kind != "batch" or (point.servers and server not in point.servers):
                continue
            small = point.model_copy(update={"waves": 2, "warmup_waves": 0})
            write_point(run_dir, server, small, synthetic_rows(rng, small, tpot * (1 + 0.05 * (point.batch_size - 1))))
        for task in {e.task for e in plan.evals}:
            write_eval_files(run_dir, server, spec, rng, task)
    atomic_write_json(run_dir.summary_json, derive_summary(run_dir).to_json())
    return run_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="kimi-k3-gb300")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        run_dir = kimi_shaped_run(Path(folder) / "run", args.profile)
        summary = derive_summary(run_dir)
        report = render_report(run_dir, summary, ReportInputs(image_base=None))
    checks = [{"name": f"check-{i}", "status": "pass", "message": "ok"} for i in range(16)]
    verify = {"verified": True, "signer": "alice@example.com (SHA256:abc)", "trust": "trusted", "checks": checks}
    body = comment_body(verify, report, bundle_url="https://example.org/bundle.tar.gz", bundle_sha256="0" * 64)
    first = body.split("```mermaid", 1)[0].split("<details>", 1)[0]
    if args.out:
        args.out.write_text(body, encoding="utf-8")
    points, comparisons = len(summary.bench.points), len(summary.bench.comparisons)
    print(f"profile {args.profile}: {points} points, {comparisons} comparisons, {len(summary.evals.verdicts)} verdicts")
    print(f"report.md: {len(report):,} characters")
    print(
        f"comment: {len(body):,} characters ({len(body) / LIMIT:.0%} of GitHub's {LIMIT:,}), "
        f"{len(body.encode()):,} bytes, {body.count(chr(10)) + 1} lines; "
        f"first screen: {len([line for line in first.splitlines() if line.strip()])} non-blank lines"
    )


if __name__ == "__main__":
    main()
