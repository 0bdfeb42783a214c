"""The built-in claims files against bundles built from the kimi-k3-gb300 plan with made-up numbers.

The run directory is written in the real file formats (the same writers the pipeline uses):
every bench point of the profile's decode sweep and speculative headline, with request timings
chosen so that decode tok/s is a number we pick, the interactivity point's agentic sessions
with every turn decoding at the tok/s/user we pick, plus eval items for the accuracy verdicts.
The bundle is sealed, packed and checked by the real ``verify_bundle`` against the real
``kimi-k3-gb300.claims.yaml``: published numbers pass; the same numbers 5% off fail.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from byog import __version__
from byog.core.io import atomic_write_json, atomic_write_text
from byog.core.paths import RunDir
from byog.plans.claims_files import builtin_claims, builtin_claims_path
from byog.plans.expand import BenchPoint, expand_plan
from byog.plans.load import load_plan, parse_plan
from byog.plans.tiers import eval_items, tiered_plan_yaml
from byog.schemas.claims import ClaimsFile, RatioClaim, ValueClaim, VerdictClaim
from byog.schemas.plan import EvalSpec, Plan

NS = 1_000_000_000
OSL = 8  # the profile's OSL 1000, shortened: decode tok/s does not depend on it here
EVAL_TASKS = ("aime25", "gpqa_diamond", "mrcr")

# The published table (docs/published-figures.md): B -> (TP8 tok/s, TP8 x, TP16 tok/s, TP16 x).
TABLE = {
    1: (193.3, 1.58, 256.4, 1.88),
    2: (317.8, 1.50, 436.7, 1.92),
    4: (540.6, 1.55, 702.5, 1.81),
    8: (820.1, 1.45, 1157.9, 1.79),
    16: (1274.8, 1.43, 1758.3, 1.71),
    32: (1702.6, 1.33, 2550.9, 1.64),
    64: (2375.9, 1.31, 3606.1, 1.62),
}
SPEC_MIDPOINT = (840.0, 488.5)  # between write-up (842 vs 488) and PR (838 vs 489)
INTERACTIVITY = {"candidate-tp16": 403.2, "baseline-tp8": 223.7, "baseline-tp16": 230.0}  # P90 tok/s/user
SESSIONS, TURNS = 3, 3  # the agentic point, cut down

TokS = Callable[[str, BenchPoint], float]  # decode tok/s a server reaches at a point


def claims_file() -> ClaimsFile:
    return ClaimsFile.model_validate(yaml.safe_load(builtin_claims_path("kimi-k3-gb300").read_text()))


def published(spec: tuple[float, float] = SPEC_MIDPOINT, scale: float = 1.0) -> TokS:
    """The published numbers: candidates at the table's tok/s (x scale), baselines at tok/s / speed-up."""

    def tok_s(server: str, point: BenchPoint) -> float:
        b = point.batch_size or 1
        if point.kind == "agentic":
            value = INTERACTIVITY[server]
        elif point.workload == "spec-decode":
            value = spec[0] if server.startswith("candidate") else spec[1]
        else:
            tp8, x8, tp16, x16 = TABLE[b]
            value, speedup = (tp16, x16) if "tp16" in server else (tp8, x8)
            if server.startswith("baseline"):
                value /= speedup
        return value * scale if server.startswith("candidate") else value

    return tok_s


def claims_test_plan() -> Plan:
    """The profile's decode sweep and speculative headline (short OSL, 2 waves) and its evals, small."""
    plan, _ = load_plan("kimi-k3-gb300")
    workloads = [
        w.model_copy(update={"osl": [OSL], "warmup_waves": 0, "waves": 2})
        for w in plan.workloads
        if w.name in ("decode", "spec-decode")
    ]
    workloads += [
        w.model_copy(update={"sessions": SESSIONS, "warmup_sessions": 0}) for w in plan.workloads if w.kind == "agentic"
    ]
    # the evals as the profile writes them (AIME25 30 x 16, GPQA 198 x 10, MRCR 200 x 1): a design
    # that keeps the gate sound, so an "equivalent" verdict can support a claim (not screening)
    evals = [e for e in plan.evals if e.task in EVAL_TASKS]
    # one launch per server: the made-up bundle writes one (the profile's two are the launch CIs' business)
    cut = plan.model_copy(update={"workloads": workloads, "evals": evals, "launches": 1})
    return parse_plan(tiered_plan_yaml(cut), "claims test plan")


def _agentic_rows(point: BenchPoint, tok_s_user: float) -> list:
    """Sessions of TURNS turns, one after another; every turn decodes a token every 1 / tok_s_user seconds."""
    from byog.schemas.bench import RequestRow

    step_ns = round(NS / tok_s_user)
    rows, t, context = [], 10 * NS, 600
    for session in range(point.sessions):
        for turn in range(TURNS):
            first = t + NS // 20
            times = [first + i * step_ns for i in range(OSL)]
            rows.append(
                RequestRow(
                    request_index=len(rows),
                    wave=-1,
                    warmup=False,
                    expected_n_in=context,
                    t_send_ns=t,
                    chunk_t_ns=times,
                    chunk_tokens=[1] * OSL,
                    n_in=context,
                    n_out=OSL,
                    session=session,
                    agent=0,
                    turn=turn,
                    parent_turn=-1,
                    expected_n_out=OSL,
                    think_s=0.5,
                    reusable_tokens=context - 100 if turn else 0,
                    cached_tokens=512 if turn else 0,
                )
            )
            t, context = times[-1] + NS // 2, context + OSL + 100
    return rows


def _rows(point: BenchPoint, tok_s: float) -> list:
    """Every request of a wave starts together and emits a token every B / tok_s seconds, exactly."""
    from byog.schemas.bench import RequestRow

    if point.kind == "agentic":
        return _agentic_rows(point, tok_s)
    assert point.batch_size is not None
    step_ns = round(point.batch_size / tok_s * NS)
    rows, t, index = [], 10 * NS, 0
    for wave in range(point.warmup_waves + point.waves):
        first = t + NS // 50
        times = [first + i * step_ns for i in range(point.osl)]
        for _ in range(point.batch_size):
            rows.append(
                RequestRow(
                    request_index=index,
                    wave=wave,
                    warmup=wave < point.warmup_waves,
                    expected_n_in=point.isl,
                    t_send_ns=t,
                    chunk_t_ns=list(times),
                    chunk_tokens=[1] * point.osl,
                    n_in=point.isl,
                    n_out=point.osl,
                )
            )
            index += 1
        t = times[-1] + NS // 100
    return rows


def _eval_files(run_dir: RunDir, server: str, spec: EvalSpec, seeds: list[int]) -> None:
    """Every server gets the same per-item scores on every pass: d = 0 on every item, the verdict is equivalent."""

    from byog.plans.tasks import TASKS
    from byog.schemas.evals import write_eval_items

    task, items = spec.task, eval_items(spec)
    rows = [
        {
            "item_id": f"test:{i}",
            "item_sha256": hashlib.sha256(f"{task} {i}".encode()).hexdigest(),
            "pass_index": k,
            "seed": seeds[k],
            "extracted_answer": "a",
            "target": "a",
            "score": float(i % 3 != 0),
            "n_output_tokens": 100,
            "bin": None,
        }
        for k in range(spec.passes)
        for i in range(items)
    ]
    write_eval_items(run_dir.eval_items(server, task), rows)
    score = 100.0 * sum(r["score"] for r in rows) / len(rows)
    atomic_write_json(
        run_dir.eval_results(server, task),
        {
            "schema_version": 1,
            "server": server,
            "task": {"name": task, "version": TASKS[task].version},
            "data": {"source": "generated", "dataset_id": "synthetic", "revision": None, "label": "generated"},
            "endpoint": {"base_url": "http://127.0.0.1:1", "model": "synthetic"},
            "sampling": {"passes": spec.passes, "seeds": seeds[: spec.passes], "temperature": 0.0, "do_sample": False},
            "runner": {"name": "synthetic"},
            "limit": spec.limit,
            "n_items": items,
            "n_rows": len(rows),
            "score": score,
            "stderr": None,
            "pass_scores": [score] * spec.passes,
            "wall_s": 1.0,
        },
    )


def make_bundle(root: Path, tok_s: TokS) -> Path:
    from byog.analysis.summary import derive_summary
    from byog.bundles.finalize import seal_and_pack
    from byog.report.markdown import render_report
    from tests.support.synthetic import write_point

    plan = claims_test_plan()
    run_dir = RunDir(root / "run")
    atomic_write_text(run_dir.plan_yaml, tiered_plan_yaml(plan))
    atomic_write_json(
        run_dir.env_json,
        {
            "schema_version": 1,
            "os": "Linux (synthetic)",
            "python": "3.11",
            "cpu": "synthetic CPU",
            "cpu_count": 2,
            "packages": {"byog": __version__, "vllm": "synthetic"},
            "gpus": [],
        },
    )
    points = expand_plan(plan)
    for server, config in plan.servers.items():
        atomic_write_json(
            run_dir.server_record(server),
            {
                "name": server,
                "runtime": "docker",
                "argv": ["vllm", "serve", "synthetic", *config.args],
                "image": None,
                "version": {"version": "synthetic"},
                "models": {"data": [{"id": "synthetic", "max_model_len": 131072}]},
            },
        )
        atomic_write_text(run_dir.server_log(server), f"INFO synthetic log of {server}\n")
        for point in (p for p in points if server in p.servers):
            write_point(run_dir, server, point, _rows(point, tok_s(server, point)))
        for spec in plan.evals:
            if server in plan.servers_for(spec):
                _eval_files(run_dir, server, spec, plan.seeds)
    summary = derive_summary(run_dir)
    atomic_write_json(run_dir.summary_json, summary.to_json())
    atomic_write_text(run_dir.report_md, render_report(run_dir, summary))
    run_dir.plots_dir.mkdir(exist_ok=True)  # present and empty: pack draws nothing
    return seal_and_pack(run_dir, root / "bundle.tar.gz", sign=False, plots=False).bundle


def verify(bundle: Path, claims: Path) -> dict[str, tuple[str, str]]:
    from byog.bundles.verify import verify_bundle

    report = verify_bundle(bundle, claims=claims, allow_unsigned=True)
    return {r.name: (r.status, r.message) for r in report.results}


@pytest.fixture(scope="module")
def matching_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_bundle(tmp_path_factory.mktemp("matching"), published())


def test_claims_files_parse_and_encode_every_published_number() -> None:
    assert builtin_claims() == ["deepseek-v4.1-flash", "h200-kimi-mirror", "kimi-k3-gb300"]
    claims = claims_file().claims
    values = {(c.server, (c.select or {}).get("batch_size"), c.value) for c in claims if isinstance(c, ValueClaim)}
    ratios = {(c.candidate, (c.select or {}).get("batch_size"), c.value) for c in claims if isinstance(c, RatioClaim)}
    for b, (tp8, x8, tp16, x16) in TABLE.items():
        assert ("candidate-tp8", b, tp8) in values and ("candidate-tp16", b, tp16) in values
        assert ("candidate-tp8", b, x8) in ratios and ("candidate-tp16", b, x16) in ratios
    for v in (842, 488, 838, 489):
        assert any(c.value == v for c in claims if isinstance(c, ValueClaim) and "spec" in c.server)
    assert {c.value for c in claims if isinstance(c, RatioClaim) and "spec" in c.candidate} == {1.73, 1.71}
    interactivity = [c for c in claims if not isinstance(c, VerdictClaim) and c.metric == "tok_s_user.p90"]
    assert sorted(c.value for c in interactivity) == [1.8, 223.7, 403.2]
    assert all(not c.not_checked and c.note and "8 GB300s" in c.note for c in interactivity)  # checked, caveat kept
    assert next(c for c in interactivity if isinstance(c, RatioClaim)).baseline == "baseline-tp8"  # as published
    verdicts = {(c.task, c.candidate) for c in claims if isinstance(c, VerdictClaim)}
    assert verdicts == {(t, s) for t in EVAL_TASKS for s in ("candidate-tp16", "candidate-tp16-spec")}
    ClaimsFile.model_validate(yaml.safe_load(builtin_claims_path("deepseek-v4.1-flash").read_text()))


def test_claim_servers_exist_in_the_profile() -> None:
    plan, _ = load_plan("kimi-k3-gb300")
    for c in claims_file().claims:
        names = (
            [c.server]
            if isinstance(c, ValueClaim)
            else [c.candidate] + ([c.baseline] if isinstance(c, RatioClaim) else [])
        )
        assert set(names) <= set(plan.servers), c.name


def test_two_published_versions_fit_in_one_tolerance() -> None:
    """Both versions of the speculative headline are required: the tolerance must cover their gap."""
    by_name = {c.name: c for c in claims_file().claims}
    for what in ("decode tok/s (candidate", "decode tok/s (stock", "speed-up ("):
        writeup = next(c for n, c in by_name.items() if n.startswith(f"spec TP16 B=1 {what}") and "write-up" in n)
        pr = next(c for n, c in by_name.items() if n.startswith(f"spec TP16 B=1 {what}") and "PR" in n)
        assert isinstance(writeup, (ValueClaim, RatioClaim)) and isinstance(pr, (ValueClaim, RatioClaim))
        low, high = sorted((writeup.value, pr.value))
        # some value v is within tolerance of both: v <= low * (1 + t) and v >= high * (1 - t)
        assert high * (1 - pr.tolerance) <= low * (1 + writeup.tolerance), what


def test_matching_bundle_holds_every_claim(matching_bundle: Path) -> None:
    results = verify(matching_bundle, builtin_claims_path("kimi-k3-gb300"))
    status, message = results["claims"]
    assert status == "pass", message
    # 28 table claims + 6 speculative + 3 interactivity + 6 verdicts hold; 7 published figures no bundle can check
    assert message.startswith("43 claim(s) hold within their tolerance; 7 not checked (one KDA layer")
    failed = {name: r for name, r in results.items() if r[0] == "fail"}
    assert not failed, failed


@pytest.mark.parametrize("spec", [(842.0, 488.0), (838.0, 489.0)])
def test_either_published_version_holds_both(tmp_path: Path, spec: tuple[float, float]) -> None:
    status, message = verify(make_bundle(tmp_path, published(spec)), builtin_claims_path("kimi-k3-gb300"))["claims"]
    assert status == "pass", message


def test_bundle_off_by_5_percent_fails(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path, published(scale=0.95))  # every candidate number 5% low
    status, message = verify(bundle, builtin_claims_path("kimi-k3-gb300"))["claims"]
    assert status == "fail"
    # the first table claim, named, with the number the bundle holds
    # 28 table claims + the headline's 2 candidate tok/s and 2 speed-ups + interactivity's candidate
    # value and speed-up; the stock numbers still hold
    assert message.startswith(
        "34 claims fail: (1) claim 'TP8 B=1 decode tok/s (candidate)' = 193.3 but the bundle says 183.6 "
        "(-5.0%, tolerance 3%)"
    )


def test_one_point_off_by_5_percent_is_named(tmp_path: Path) -> None:
    base = published()

    def one_off(server: str, point: BenchPoint) -> float:
        off = server == "candidate-tp16" and point.workload == "decode" and point.batch_size == 64
        return base(server, point) * (1.05 if off else 1.0)

    status, message = verify(make_bundle(tmp_path, one_off), builtin_claims_path("kimi-k3-gb300"))["claims"]
    assert status == "fail"
    # and its speed-up: 1.62 x 1.05 = 1.70
    assert message.startswith(
        "2 claims fail: (1) claim 'TP16 B=64 decode tok/s (candidate)' = 3606.1 but the bundle says 3786 (+5.0%"
    )
    assert "(2) claim" in message


def test_interactivity_off_by_5_percent_is_named(tmp_path: Path) -> None:
    """The agentic point's P90 tok/s/user is what the interactivity claims read: 5% off on the
    8-GPU baseline fails its value claim and the 16-vs-8 speed-up, nothing else."""
    base = published()

    def slow_baseline(server: str, point: BenchPoint) -> float:
        off = server == "baseline-tp8" and point.kind == "agentic"
        return base(server, point) * (0.95 if off else 1.0)

    results = verify(make_bundle(tmp_path, slow_baseline), builtin_claims_path("kimi-k3-gb300"))
    status, message = results["claims"]
    assert status == "fail"
    # and 403.2 / 212.5 = 1.90 against the published 1.8
    assert message.startswith(
        "2 claims fail: (1) claim 'interactivity P90 tok/s/user at C=1 (stock, 8 GPUs, earlier run)' = 223.7 "
        "but the bundle says 212.5 (-5.0%"
    )
    assert results["summary"][0] == "pass"  # the bundle itself is sound: only the claim misses
