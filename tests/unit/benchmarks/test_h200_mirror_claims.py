"""The h200-kimi-mirror claims: filled from a bundle of that profile, verify holds them and fails them moved 5%.

The bundle is made of the profile's own points with chosen timings (no GPU here): stock decodes at
one token per step, the speculative server at ~5.7 tokens per step with counters saying AL 5.73.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path

import pytest
import yaml

from byog import __version__
from byog.core.io import atomic_write_json, atomic_write_text
from byog.core.paths import RunDir
from byog.plans.expand import expand_plan
from byog.plans.load import load_plan, parse_plan
from byog.plans.tiers import tiered_plan_yaml
from byog.schemas.bench import BenchPoint, RequestRow, write_request_rows
from byog.schemas.claims import ClaimsFile

pytestmark = pytest.mark.gpu_evidence

REPO = Path(__file__).resolve().parents[3]
NS = 1_000_000_000
OSL = 8
STEP_S = {"stock-tp1": 0.005, "spec-tp1": 0.006}  # per decode step, at every B


def _script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("h200_mirror_claims", REPO / "benchmarks" / "h200_mirror_claims.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows(server: str, point: BenchPoint) -> list[RequestRow]:
    b = point.batch_size or 1
    ks = [1] * OSL if server == "stock-tp1" else [1, 3, 4]  # spec: 8 tokens in 3 steps
    step = round(STEP_S[server] * NS)
    rows, t, index = [], 10 * NS, 0
    for wave in range(point.warmup_waves + point.waves):
        first = t + NS // 50
        times = [first + i * step for i in range(len(ks))]
        for _ in range(b):
            rows.append(
                RequestRow(
                    request_index=index,
                    wave=wave,
                    warmup=wave < point.warmup_waves,
                    expected_n_in=1,
                    t_send_ns=t,
                    chunk_t_ns=list(times),
                    chunk_tokens=list(ks),
                    n_in=1,
                    n_out=OSL,
                )
            )
            index += 1
        t = times[-1] + NS // 100
    return rows


def make_bundle(root: Path) -> Path:
    from byog.analysis.summary import derive_summary
    from byog.bundles.finalize import seal_and_pack
    from byog.report.markdown import render_report

    plan, _ = load_plan("h200-kimi-mirror")
    plan = parse_plan(
        tiered_plan_yaml(
            plan.model_copy(
                update={
                    "workloads": [
                        w.model_copy(update={"osl": [OSL], "warmup_waves": 0, "waves": 2}) for w in plan.workloads
                    ],
                    "launches": 1,  # the made-up run writes one launch per server
                }
            )
        ),
        "mirror test",
    )
    run_dir = RunDir(root / "run")
    atomic_write_text(run_dir.plan_yaml, tiered_plan_yaml(plan))
    atomic_write_json(run_dir.env_json, {"schema_version": 1, "os": "Linux (synthetic)", "python": "3.12", "gpus": []})
    for server, config in plan.servers.items():
        atomic_write_json(
            run_dir.server_record(server), {"name": server, "runtime": "local", "argv": ["vllm", "serve", *config.args]}
        )
        atomic_write_text(run_dir.server_log(server), f"INFO synthetic log of {server}\n")
        for point in (p for p in expand_plan(plan) if server in p.servers):
            rows = _rows(server, point)
            n = sum(r.n_out for r in rows)
            deltas: dict[str, object] = {"vllm:generation_tokens_total": float(n)}
            if server == "spec-tp1":  # 2 drafted steps per request, accepting 2 then 3 of 7 (AL 3.5)
                drafts = 2 * len(rows)
                deltas.update(
                    {
                        "vllm:spec_decode_num_drafts_total": float(drafts),
                        "vllm:spec_decode_num_accepted_tokens_total": float(5 * len(rows)),
                        "vllm:spec_decode_num_accepted_tokens_per_pos_total": [
                            float(drafts),
                            float(drafts),
                            float(len(rows)),
                            0.0,
                            0.0,
                            0.0,
                            0.0,
                        ],
                    }
                )
            write_request_rows(run_dir.bench_rows(server, point.point_id), rows)
            atomic_write_json(
                run_dir.bench_point(server, point.point_id),
                {
                    "schema_version": 3,
                    "server": server,
                    "point": point.model_dump(mode="json"),
                    "prompts_label": "random-ids",
                    "status": "complete",
                    "started_at": "2026-01-01T00:00:00+00:00",
                    "duration_s": 1.0,
                    "t_start_ns": rows[0].t_send_ns,
                    "t_end_ns": rows[-1].chunk_t_ns[-1],
                    "counter_deltas": deltas,
                    "measured_counter_deltas": deltas,
                    "byog_version": __version__,
                },
            )
    summary = derive_summary(run_dir)
    atomic_write_json(run_dir.summary_json, summary.to_json())
    atomic_write_text(run_dir.report_md, render_report(run_dir, summary))
    run_dir.plots_dir.mkdir(exist_ok=True)
    return seal_and_pack(run_dir, root / "bundle.tar.gz", sign=False, plots=False).bundle


def verify(bundle: Path, claims: Path) -> tuple[str, str]:
    from byog.bundles.verify import verify_bundle

    report = verify_bundle(bundle, claims=claims, allow_unsigned=True)
    result = next(r for r in report.results if r.name == "claims")
    return result.status, result.message


def test_committed_claims_parse_and_name_the_profiles_servers_and_workloads() -> None:
    plan, _ = load_plan("h200-kimi-mirror")
    claims = ClaimsFile.model_validate(
        yaml.safe_load((REPO / "byog/plans/claims/h200-kimi-mirror.claims.yaml").read_text())
    )
    workloads = {w.name for w in plan.workloads}
    for claim in claims.claims:
        servers = [claim.server] if hasattr(claim, "server") else [claim.candidate, claim.baseline]  # type: ignore[attr-defined]
        assert set(servers) <= set(plan.servers) and claim.select["workload"] in workloads  # type: ignore[attr-defined]
        assert claim.tolerance == 0.03  # type: ignore[attr-defined]


def test_the_h200_bundle_holds_its_claims_and_fails_them_moved_5_percent(tmp_path: Path) -> None:
    """The committed H200 run (benchmarks/results/h200-spec/mirror: its raw rows and records) packed
    here, unsigned as on that machine (no ssh-keygen), against the committed claims, then with every
    candidate value +5%."""
    from byog.bundles.finalize import seal_and_pack
    from byog.core.paths import RunDir

    run = tmp_path / "mirror"
    shutil.copytree(REPO / "benchmarks/results/h200-spec/mirror", run)
    bundle = seal_and_pack(RunDir(run), sign=False, plots=False).bundle
    claims = REPO / "byog/plans/claims/h200-kimi-mirror.claims.yaml"
    status, message = verify(bundle, claims)
    assert status == "pass" and message.startswith("29 claim(s) hold"), message
    moved = tmp_path / "moved.claims.yaml"
    moved.write_text(_script().moved_text(claims.read_text()), encoding="utf-8")
    status, message = verify(bundle, moved)
    assert status == "fail" and "spec B=1 decode tok/s" in message and "-4.8%" in message, message


def test_fill_then_verify_holds_and_a_5_percent_move_fails(tmp_path: Path) -> None:
    script = _script()
    bundle = make_bundle(tmp_path)
    claims = tmp_path / "mirror.claims.yaml"
    committed = (REPO / "byog/plans/claims/h200-kimi-mirror.claims.yaml").read_text()
    # the committed file holds the H200's figures: make every claim pending again, then fill it here
    claims.write_text(re.sub(r"(?m)^(    tolerance: .*)$", r"\1\n    not_checked: not measured yet", committed))
    status, message = verify(bundle, claims)
    assert status == "fail" and "none of the" in message and "not checked" in message  # nothing measured: it fails
    assert script.fill(RunDir(tmp_path / "run").summary_json, claims) == 0
    filled = ClaimsFile.model_validate(yaml.safe_load(claims.read_text())).claims
    assert not any(c.not_checked for c in filled)
    al = next(c for c in filled if c.name == "spec B=1 acceptance length")
    assert al.value == pytest.approx(3.5)  # type: ignore[union-attr]
    assert "# Tolerance 3% (relative)" in claims.read_text()  # comments kept
    assert verify(bundle, claims)[0] == "pass"
    moved = tmp_path / "moved.claims.yaml"
    moved.write_text(script.moved_text(claims.read_text()), encoding="utf-8")
    status, message = verify(bundle, moved)
    assert status == "fail" and "spec B=1 decode tok/s" in message
