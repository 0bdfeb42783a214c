"""`byog reproduce` end to end without vLLM: the original bundle is made by `byog run` against
byog's loopback fake OpenAI server (bench/ceiling.py), reproduced against the same fake, then
doctored (candidate decode 20% faster in its raw rows, re-derived, re-signed) and caught. The
reproduction is itself a bundle that verifies, and `byog report` shows it beside the original."""

from __future__ import annotations

import json
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from byog.analysis import hardware
from byog.bench.ceiling import server_process
from byog.bundles.verify import verify_bundle
from byog.cli import app
from byog.core.reporter import NullReporter
from byog.images.fingerprint import environment_fingerprint
from byog.pipeline.reproduce import DROPPED_HEADER, ReproduceOptions, reproduce
from byog.pipeline.run import run_plan
from byog.plans.subset import Overrides
from byog.schemas.env import EnvRecord
from tests.support.doctor import doctored_bundle
from tests.support.hostile import HONEST_SERVERS, reproduce_servers
from tests.support.keys import allowed_signers, make_key

# a real bench against a loopback fake: its timing is this box's (scripts/test.sh runs these alone)
pytestmark = pytest.mark.serial

runner = CliRunner()
DECODE_METRICS = ("decode_tok_s", "tpot_s.p50")  # TTFT of a fake that does no prefill is scheduler noise


@pytest.fixture(scope="module")
def fake() -> Iterator[str]:
    # its own process (no GIL shared with the client), and an ITL a loaded 2-core box's event-loop lag stays
    # under 25% of, so the points stay valid (at 20 ms a P99 lag of 7 ms struck them)
    with server_process(step_s=0.05) as base_url:
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
        run_plan(str(plan), run_dir, NullReporter())
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
        return reproduce(bundle, opts, NullReporter())


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
    assert "by maintainer@\u2060example.com (key `SHA256:" in section and "signature verified" in section
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
    report = verify_bundle(made["doctored"], allowed_signers=made["signers"])
    assert report.verified, report.failures  # every number recomputes
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


# --- the bundle is data: what runs is the maintainer's (docs/reproduce.md, "What runs where") ---

HOSTILE_SERVERS = reproduce_servers("PWNED")  # PWNED: in the working directory, which must stay empty
PROXY_OPTION = "--ssh-option=-oProxyCommand=sh -c 'touch PWNED'"  # the line that keeps the bundle's option
REFUSED = {
    "ssh": "byog: server 'candidate' of the bundle runs on other hosts (a@node0, a@node1) with ssh options "
    "-oProxyCommand=sh -c 'touch PWNED'; byog reproduce runs nothing remote that you did not name",
    "trust": "byog: server 'candidate' of the bundle passes --trust-remote-code, which runs Python code from the "
    "model's repository; byog reproduce passes it only when you do (--allow-flag --trust-remote-code)",
    "image": "byog: server 'candidate' of the bundle runs image 'evil.example/vllm:latest', which is not pinned by a "
    "digest you allow",
}


NUMERICS_SECTION = (  # the honest baseline is already eager: its envelope variant is another stock change
    "numerics: {random_prompts: 1, random_isl: 16, dataset_prompts: 0, conformance: false, "
    "envelope_variant: chunked-512}\n"
)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Signed synthetic bundles (trusted signer) whose plans ask for hosts, code and an image; and an honest one."""
    from byog.bundles.finalize import seal_and_pack
    from byog.core.io import atomic_write_text
    from byog.report.markdown import render_report
    from tests.support.report_runs import derive
    from tests.support.synthetic import SyntheticSpec, make_run_dir, plan_yaml, saturate_client

    folder = tmp_path_factory.mktemp("synthetic")
    key, pub = make_key(folder, "contributor")
    spec = SyntheticSpec(batch_sizes=(1,), eval_items=4)
    text = plan_yaml(spec)
    assert HONEST_SERVERS in text
    out = {"signers": allowed_signers(folder / "allowed_signers", [("contributor@example.com", pub)])}
    plans = {name: text.replace(HONEST_SERVERS, servers) for name, servers in HOSTILE_SERVERS.items()}
    plans["honest"] = text
    plans["numerics"] = text + NUMERICS_SECTION
    for name, plan_text in plans.items():
        rd = make_run_dir(folder / f"run-{name}", spec, plan_text=plan_text)
        rd.plots_dir.mkdir(exist_ok=True)
        out[name] = seal_and_pack(rd, folder / f"{name}.tar.gz", key=key, plots=None).bundle
    rd = make_run_dir(folder / "run-invalid", spec, plan_text=text)  # its only point invalid on the candidate
    saturate_client(rd, "candidate", "decode-b1-isl32-osl64")
    summary = derive(rd)
    atomic_write_text(rd.report_md, render_report(rd, summary))
    rd.plots_dir.mkdir(exist_ok=True)
    out["invalid"] = seal_and_pack(rd, folder / "invalid.tar.gz", key=key, plots=None).bundle
    return out


@pytest.mark.parametrize("name", sorted(HOSTILE_SERVERS))
def test_a_bundle_asking_for_hosts_code_or_an_image_is_refused_in_one_sentence(
    synthetic, nothing_runs: Path, name: str
) -> None:
    result = runner.invoke(
        app, ["reproduce", str(synthetic[name]), "--allowed-signers", str(synthetic["signers"]), "--dry-run"]
    )
    assert result.exit_code == 2, result.output
    assert result.output.startswith(REFUSED[name]) and result.output.count("\n") == 1, result.output
    assert sorted(p.name for p in nothing_runs.iterdir()) == []  # no run dir, no PWNED


def test_a_dry_run_prints_what_would_run_and_runs_nothing(synthetic, nothing_runs: Path) -> None:
    image = "byog-test/absent@sha256:" + "0" * 64  # docker would fail loudly: there is no engine at DOCKER_HOST
    result = runner.invoke(
        app,
        [
            "reproduce",
            str(synthetic["ssh"]),
            "--allowed-signers",
            str(synthetic["signers"]),
            "--dry-run",
            "--host",
            "candidate=me@192.0.2.1",
            "--host",
            "candidate=me@192.0.2.2",
            "--ssh-option=-oProxyCommand=touch MAINTAINERS-PROXY",  # the maintainer's: would run if ssh did
            "--image",
            f"baseline={image}",
            "--env",
            "baseline=VLLM_LOGGING_LEVEL=DEBUG",
        ],
        env={"COLUMNS": "400"},
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "byog reproduce --dry-run: model builtin:smollm2-135m-instruct; the servers, in launch order:"
    assert lines[1] == (
        "  candidate: runtime ssh, nodes 2, hosts me@192.0.2.1 me@192.0.2.2, "
        "ssh options '-oProxyCommand=touch MAINTAINERS-PROXY'"
    )
    assert lines[2] == "    (2 nodes, launcher native: each node's command is under 'per-node launch')"
    assert lines[3] == f"  baseline: runtime docker, image {image}"
    # the docker runtime's own container spec: the run line byog's SDK call makes
    assert lines[4].startswith("    argv: docker run --detach ") and lines[4].endswith(
        "--max-model-len 4096 --enforce-eager"
    )
    assert "-p 127.0.0.1:PORT:8000" in lines[4] and f" {image} " in lines[4] and "--gpus all" in lines[4]
    assert '"VLLM_LOGGING_LEVEL": "DEBUG"' in lines[5] and lines[5].startswith("    env: {")
    assert lines[6:] == [
        "point decode-b1-isl32-osl64 (ISL 32, OSL 64) on candidate, baseline",
        'eval gsm8k: 3 item(s) on candidate, baseline, generation {"do_sample": false, "max_gen_toks": 256, '
        '"temperature": 0.0, "until": ["Question:", "</s>", "<|im_end|>"]}',
        "why these points: drawn (--sample 1) by the bundle's manifest hash among the 1 point(s) valid on every "
        "server that ran them: decode-b1-isl32-osl64",
        "the bundle's work this reproduction leaves out:",
        "  1 of 4 items of eval gsm8k on baseline (--eval-items 4 re-runs them all)",
        "  1 of 4 items of eval gsm8k on candidate (--eval-items 4 re-runs them all)",
        DROPPED_HEADER,  # what the bundle asked for and the maintainer replaced, each with the line that keeps it
        "  server 'candidate': host a@node0 (keep it: --host candidate=a@node0)",
        "  server 'candidate': host a@node1 (keep it: --host candidate=a@node1)",
        f"  server 'candidate': ssh option -oProxyCommand=sh -c 'touch PWNED' (keep it: {shlex.quote(PROXY_OPTION)})",
        "⚠ the bundle ran on synthetic CPU, 2 cores, no GPU, this machine is "
        f"{hardware.describe(EnvRecord.model_validate(environment_fingerprint()))}: ratios only (candidate / "
        "baseline is compared, absolute numbers are not)",
        "seed 1234; nothing was started (--dry-run)",
    ]
    assert sorted(p.name for p in nothing_runs.iterdir()) == []  # no run dir, no MAINTAINERS-PROXY


def test_a_dry_run_warns_when_the_drawn_point_is_invalid_and_previews_without_the_model(
    synthetic, nothing_runs: Path, tmp_path: Path
) -> None:
    """No point is valid on both servers, so the draw falls back to an invalid one: said, with --points;
    a model folder that is not there yet is named as what the run needs, not a refusal."""
    dry_run = ["reproduce", str(synthetic["invalid"]), "--allowed-signers", str(synthetic["signers"]), "--dry-run"]
    result = runner.invoke(app, [*dry_run, "--model-path", str(tmp_path / "not-downloaded")], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.output.splitlines() if line.startswith("⚠ ")]
    assert warnings[0].startswith("⚠ point decode-b1-isl32-osl64 is invalid in the bundle on candidate (candidate: ")
    assert "client saturated" in warnings[0] and "--points" in warnings[0]
    assert "why these points: drawn (--sample 1) by the bundle's manifest hash among all measured points" in (
        result.output
    )
    assert warnings[-1].startswith(f"⚠ the model {tmp_path / 'not-downloaded'} is not on this machine")
    assert f"serve '<{tmp_path / 'not-downloaded'}>'" in result.output
    doc = json.loads(runner.invoke(app, [*dry_run, "--json"]).output)
    assert "--points" in doc["warnings"][0] and "ratios only" in doc["warnings"][1] and doc["model_needed"] is None
    assert sorted(p.name for p in nothing_runs.iterdir()) == []


def test_a_dry_run_of_a_bundle_with_numerics_shows_the_derived_control_and_variant(
    synthetic, nothing_runs: Path
) -> None:
    """The baseline first, then the control and envelope variant byog derives from it (a KeyError before)."""
    result = runner.invoke(
        app,
        ["reproduce", str(synthetic["numerics"]), "--allowed-signers", str(synthetic["signers"]), "--dry-run"],
        env={"COLUMNS": "400"},
    )
    assert result.exit_code == 0, result.output
    servers = [
        line.split(":")[0].strip()
        for line in result.output.split("\npoint ")[0].splitlines()
        if line.startswith("  ") and not line.startswith("    ")
    ]
    assert servers == ["baseline", "baseline.control", "baseline.variant", "candidate"], result.output
    argv = [line for line in result.output.splitlines() if line.startswith("    argv: ")]
    assert argv[1].endswith("--enforce-eager --dtype float16") and argv[2].endswith(
        "--enforce-eager --max-num-batched-tokens 512"
    )
    assert sorted(p.name for p in nothing_runs.iterdir()) == []


def test_a_bundle_with_numerics_reproduces_its_baseline_first(tmp_path: Path) -> None:
    """The candidate is listed first; its numerics pass sends its baseline's prompts, so the
    baseline must launch first (in plan order reproduce exited 2: "run 'baseline' first")."""
    from tests.support.fake_vllm import FakeVllm

    contributor, contributor_pub = make_key(tmp_path, "contributor")
    maintainer, maintainer_pub = make_key(tmp_path, "maintainer")
    signers = allowed_signers(
        tmp_path / "allowed_signers",
        [("contributor@example.com", contributor_pub), ("maintainer@example.com", maintainer_pub)],
    )
    fakes = {"candidate": FakeVllm(noise=0.01), "baseline": FakeVllm(noise=0.01)}
    try:
        plan = tmp_path / "plan.yaml"
        plan.write_text(
            "name: numerics-fake\nmodel: {path: builtin:smollm2-135m-instruct}\nservers:\n"
            + "".join(f"  {n}: {{runtime: endpoint, url: '{f.base_url}'}}\n" for n, f in fakes.items())
            + "baseline: baseline\nnumerics: {random_prompts: 0, dataset_prompts: 2, "
            "dataset_isl: 32, max_tokens: 4, conformance: false}\n"
        )
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("BYOG_SIGNING_KEY", str(contributor.path))
            run_plan(str(plan), tmp_path / "run", NullReporter())
        opts = ReproduceOptions(
            run_dir=tmp_path / "reproduction",
            allowed_signers=signers,
            servers=["candidate", "baseline"],
            overrides=Overrides(endpoints=[f"{n}={f.base_url}" for n, f in fakes.items()]),
        )
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("BYOG_SIGNING_KEY", str(maintainer.path))
            done = reproduce(tmp_path / "run" / "bundle.tar.gz", opts, NullReporter())
    finally:
        for fake in fakes.values():
            fake.close()
    assert (
        json.loads((done.run_dir / "summary.json").read_text())["numerics"]["comparisons"][0]["candidate"]
        == "candidate"
    )
    record = json.loads((done.run_dir / "numerics" / "candidate" / "record.json").read_text())
    baseline = json.loads((done.run_dir / "numerics" / "baseline" / "record.json").read_text())
    assert record["prompts"] == baseline["prompts"]  # the candidate sent its baseline's prompts
    # endpoints: no control, so the verdict is "insensitive" on both sides, which confirms nothing
    assert [(n.candidate, n.outcome) for n in done.record.numerics] == [("candidate", "not compared")]
    assert verify_bundle(done.packed.bundle, allowed_signers=signers).verified
