"""`byog reproduce` end to end without vLLM: the original bundle is made by `byog run` against
byog's loopback fake OpenAI server (bench/ceiling.py), reproduced against the same fake, then
doctored (candidate decode 20% faster in its raw rows, re-derived, re-signed) and caught. The
reproduction is itself a bundle that verifies, and `byog report` shows it beside the original."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from byog.bench.ceiling import server_process
from byog.bundles.verify import verify_bundle
from byog.cli import app
from byog.pipeline.reproduce import ReproduceOptions, reproduce
from byog.pipeline.run import run_plan
from byog.plans.subset import Overrides
from tests.support.bundles_kit import allowed_signers, make_key
from tests.support.doctor import doctored_bundle

runner = CliRunner()
DECODE_METRICS = ("decode_tok_s", "tpot_s.p50")  # TTFT of a fake that does no prefill is scheduler noise


@pytest.fixture(scope="module")
def fake() -> Iterator[str]:
    with server_process(step_s=0.02) as base_url:  # its own process: no GIL shared with the client
        yield base_url


@pytest.fixture(scope="module")
def made(fake: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    folder = tmp_path_factory.mktemp("reproduce")
    contributor, contributor_pub = make_key(folder, "contributor")
    maintainer, maintainer_pub = make_key(folder, "maintainer")
    plan = folder / "plan.yaml"
    plan.write_text(
        "name: fake\nmodel: {path: fake-org/fake-model, max_model_len: 2048}\n"
        f"servers:\n  candidate: {{runtime: endpoint, url: '{fake}'}}\n  baseline: {{runtime: endpoint, url: "
        f"'{fake}'}}\n"
        "baseline: baseline\nworkloads:\n"
        "  - {kind: batch, name: decode, batch_sizes: [1, 2], isl: [16], osl: [16], warmup_waves: 1, waves: 4}\n"
        "seeds: [1234]\n"
    )
    run_dir = folder / "run"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BYOG_SIGNING_KEY", str(contributor.path))
        mp.setenv("HF_HUB_OFFLINE", "1")
        run_plan(str(plan), run_dir, Console(file=io.StringIO()))
    shipped = folder / "shipped" / "bundle.tar.gz"  # as a maintainer downloads it
    shipped.parent.mkdir()
    shutil.copy(run_dir / "bundle.tar.gz", shipped)
    doctored = doctored_bundle(run_dir, folder / "doctored" / "bundle.tar.gz", contributor).bundle
    signers = allowed_signers(
        folder / "allowed_signers",
        [("contributor@example.com", contributor_pub), ("maintainer@example.com", maintainer_pub)],
    )
    return {"folder": folder, "shipped": shipped, "doctored": doctored, "signers": signers, "maintainer": maintainer}


def _reproduce(
    made: dict,
    bundle: Path,
    fake: str,
    name: str,
    servers: tuple[str, ...] = ("candidate", "baseline"),
    **options: object,
):
    endpoints = [f"{server}={fake}" for server in servers]
    opts = ReproduceOptions(
        run_dir=made["folder"] / f"{name}-run",
        allowed_signers=made["signers"],
        eval_items=0,
        overrides=Overrides(endpoints=endpoints),
        servers=list(servers) if len(servers) < 2 else [],
        **options,
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BYOG_SIGNING_KEY", str(made["maintainer"].path))
        mp.setenv("HF_HUB_OFFLINE", "1")
        return reproduce(bundle, opts, Console(file=io.StringIO()))


def test_an_honest_bundle_reproduces_and_the_reproduction_is_a_signed_bundle(
    made: dict[str, object], fake: str
) -> None:
    done = _reproduce(made, made["shipped"], fake, "honest")
    record = done.record
    assert record.selection == "sampled" and len(record.points) == 1
    assert record.original.signer_principal == "contributor@example.com"
    assert record.hardware.same and record.overrides == [f"--endpoint candidate={fake}", f"--endpoint baseline={fake}"]
    checks = {(c.kind, c.server, c.metric): c for c in record.points[0].checks}
    for key in [("value", s, m) for s in ("candidate", "baseline") for m in DECODE_METRICS] + [
        ("ratio", "candidate", m) for m in DECODE_METRICS
    ]:
        assert checks[key].outcome == "reproduced", checks[key]
    assert done.packed.bundle == made["shipped"].parent / "bundle.reproduction.tar.gz"
    verified = verify_bundle(done.packed.bundle, allowed_signers=made["signers"])
    assert verified.verified, verified.failures
    assert verified.signer is not None and verified.signer.startswith("maintainer@example.com")
    report = (done.run_dir / "report.md").read_text()
    assert "## Reproduction" in report and record.points[0].point_id in report.split("## Reproduction", 1)[1]

    # byog report on the original finds the reproduction beside it and names who reproduced what
    out = made["folder"] / "report-out"
    result = runner.invoke(
        app, ["report", str(made["shipped"]), "-o", str(out), "--allowed-signers", str(made["signers"])]
    )
    assert result.exit_code == 0, result.output
    text = (out / "report.md").read_text()
    section = text.split("## Reproductions", 1)[1].split("## Environment", 1)[0]
    assert "by maintainer@example.com (key `SHA256:" in section and "signature verified" in section
    assert f"points {record.points[0].point_id} ({record.points[0].load})" in section


def test_the_sample_is_the_bundles_and_named_points_override_it(made: dict[str, object], fake: str) -> None:
    import hashlib
    import tarfile

    from byog.analysis.reproduction import sample_points

    with tarfile.open(made["shipped"], "r:gz") as tar:
        manifest = tar.extractfile("manifest.intoto.json").read()  # type: ignore[union-attr]
    expected = sample_points(
        ["decode-b1-isl16-osl16", "decode-b2-isl16-osl16"], hashlib.sha256(manifest).hexdigest(), 1
    )
    done = _reproduce(
        made,
        made["shipped"],
        fake,
        "named",
        points=["decode-b2-isl16-osl16"],
        servers=("candidate",),
        out=made["folder"] / "named.tar.gz",
    )
    assert [p.point_id for p in done.record.points] == ["decode-b2-isl16-osl16"] and done.record.selection == "named"
    assert {c.server for c in done.record.points[0].checks} == {"candidate"}  # no baseline, so no ratio either
    honest = json.loads((made["folder"] / "honest-run" / "reproduction.json").read_text())
    assert honest["points_requested"] == expected


def test_a_doctored_bundle_verifies_but_does_not_reproduce(made: dict[str, object], fake: str) -> None:
    assert verify_bundle(made["doctored"], allowed_signers=made["signers"]).verified  # every number recomputes
    done = _reproduce(made, made["doctored"], fake, "doctored", points=["decode-b1-isl16-osl16"])
    checks = {(c.kind, c.server, c.metric): c for c in done.record.points[0].checks}
    assert done.record.outcome == "not reproduced"
    assert checks[("value", "candidate", "tpot_s.p50")].outcome == "not reproduced"
    assert checks[("value", "candidate", "tpot_s.p50")].deviation == pytest.approx(0.223, abs=0.05)  # ln(1/0.8)
    assert checks[("ratio", "candidate", "decode_tok_s")].outcome == "not reproduced"
    assert checks[("value", "baseline", "tpot_s.p50")].outcome == "reproduced"


def test_a_bundle_that_does_not_verify_is_not_reproduced(made: dict[str, object], fake: str, tmp_path: Path) -> None:
    stranger = tmp_path / "allowed_signers"
    stranger.write_text(made["signers"].read_text().splitlines()[1] + "\n")  # the maintainer only
    result = runner.invoke(
        app,
        [
            "reproduce",
            str(made["shipped"]),
            "--allowed-signers",
            str(stranger),
            "--endpoint",
            f"candidate={fake}",
            "--run-dir",
            str(tmp_path / "run"),
        ],
    )
    assert result.exit_code == 1 and "does not verify (signature:" in result.output and "wrong signer" in result.output
    assert not (tmp_path / "run").exists()
