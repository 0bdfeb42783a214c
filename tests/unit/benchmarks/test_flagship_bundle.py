"""benchmarks/flagship_bundle.py at a small scale: the kimi-k3-gb300 shape (smoke tier with the
profile's two launches, OSL and eval rows cut to 1%) builds, packs, in parts too, and verifies; and
the committed figures re-print."""

from __future__ import annotations

from pathlib import Path

from byog.bundles.finalize import seal_and_pack
from byog.bundles.verify import verify_bundle_set
from byog.core.paths import RunDir
from byog.plans.expand import expand_plan
from byog.plans.load import load_plan
from byog.plans.tiers import apply_tier
from tests.support.benchmark_scripts import load_script
from tests.support.keys import allowed_signers, make_key

flagship = load_script("flagship_bundle")


def test_a_scaled_down_flagship_bundle_packs_and_verifies(tmp_path: Path) -> None:
    key, public = make_key(tmp_path, "flagship")
    allowed = allowed_signers(tmp_path / "allowed_signers", [("flagship@example.com", public)])
    shape = flagship.build_run(tmp_path / "run", "smoke", 0.01, launches=2)
    plan = apply_tier(load_plan(flagship.PROFILE)[0], "smoke").model_copy(update={"launches": 2})
    batch = [p for p in expand_plan(plan) if p.kind == "batch"]
    assert shape["launches"] == dict.fromkeys(plan.servers, 2)
    assert shape["points"] == sum(len(p.servers) for p in batch)  # every batch point on every server it runs on
    assert shape["points_measured"] == 2 * shape["points"]  # ... on each of its launches
    requests = 0
    for p in batch:
        assert p.batch_size is not None
        requests += len(p.servers) * p.batch_size * (p.warmup_waves + p.waves)
    assert shape["requests"] == 2 * requests
    run_dir = RunDir(tmp_path / "run")
    for launch in (1, 2):  # every point and a server record on each launch, where the pipeline writes them
        at = run_dir.for_launch(launch)
        assert all(at.server_record(server).is_file() for server in plan.servers)
        assert all(at.bench_point_complete(server, p.point_id) for p in batch for server in p.servers)
    assert run_dir.for_launch(2).bench_dir(plan.baseline) != run_dir.bench_dir(plan.baseline)
    run_dir.plots_dir.mkdir(exist_ok=True)  # present and empty: pack draws nothing
    whole = seal_and_pack(run_dir, tmp_path / "bundle.tar.gz", key=key)
    assert verify_bundle_set([whole.bundle], allowed_signers=allowed).verified
    third = whole.size_bytes // 3
    split = seal_and_pack(run_dir, tmp_path / "bundle.tar.gz", key=key, budget_bytes=third)
    assert len(split.parts) >= 3 and all(p.stat().st_size <= third for p in split.parts)
    report = verify_bundle_set([split.bundle], allowed_signers=allowed)
    assert report.verified, report.failures


def test_the_committed_figures_reprint() -> None:
    import json

    results = json.loads(flagship.RESULTS.read_text())["results"]
    text = flagship.render(results)
    assert {r["tier"] for r in results} == {"standard", "full"}
    assert all(r["verify"]["verified"] for r in results) and "verified" in text
