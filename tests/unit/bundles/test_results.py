"""``byog.open`` on signed bundles: verified first with verify's trust inputs, unpacked once into the
cache by digest, the tables built from the raw records (the headline ratio recomputed from the
per-request rows is the summary's; the flipped items are ``byog items``'); a hostile bundle is
refused by ``open`` and ``export`` in verify's words, and nothing of it is written; the documented
examples (docs/analysis.md) run; ``import byog`` loads no pandas."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from byog.analysis.summary import derive_summary
from byog.bundles.finalize import seal_and_pack
from byog.bundles.items import load_discordant
from byog.bundles.results import open_results
from byog.bundles.verify import verify_bundle
from byog.cli import app
from byog.core.errors import CheckFailed, UsageError
from byog.core.io import atomic_write_json
from byog.core.paths import RunDir
from byog.core.safe_text import one_line
from tests.support.flipped import arithmetic_rows, write_task
from tests.support.hostile import CASES, Kit
from tests.support.keys import allowed_signers, make_key
from tests.support.synthetic import SyntheticSpec, make_run_dir

REPO = Path(__file__).resolve().parents[3]
SPEC = SyntheticSpec(batch_sizes=(1, 2), isl=4, osl=8, warmup_waves=1, waves=3, eval_items=6, log_lines=2)
ROWS = arithmetic_rows(12)
V1 = REPO / "tests" / "fixtures" / "report-v1"


@dataclass(frozen=True)
class Signed:
    run_dirs: tuple[RunDir, RunDir]
    bundles: tuple[Path, Path]
    allowed: Path


def _sealed(folder: Path, spec: SyntheticSpec, right: tuple[set[int], set[int]], key: object) -> tuple[RunDir, Path]:
    run_dir = make_run_dir(folder / "run", spec)
    write_task(run_dir, "candidate", "arithmetic_generated", ROWS, right[0])
    write_task(run_dir, "baseline", "arithmetic_generated", ROWS, right[1])
    atomic_write_json(run_dir.summary_json, derive_summary(run_dir).to_json())
    run_dir.plots_dir.mkdir(exist_ok=True)
    packed = seal_and_pack(run_dir, folder / "bundle.tar.gz", sign=True, key=key, plots=None)  # type: ignore[arg-type]
    return run_dir, packed.bundle


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    folder = tmp_path_factory.mktemp("open")
    key, public = make_key(folder, "signer")
    one = _sealed(folder / "pr-1", SPEC, (set(range(0, 8)), set(range(2, 10))), key)
    two = _sealed(
        folder / "pr-2", replace(SPEC, seed=99, candidate_speedup=1.1), (set(range(0, 9)), set(range(9))), key
    )
    allowed = allowed_signers(folder / "allowed_signers", [("signer@test", public)])
    return Signed((one[0], two[0]), (one[1], two[1]), allowed)


@pytest.fixture(autouse=True)
def private_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache and a temp dir of the test's own: what open writes can be listed."""
    monkeypatch.setenv("BYOG_CACHE_DIR", str(tmp_path / "cache"))
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return tmp_path


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


def test_a_bundle_opens_from_its_digest_folder_once_verified(signed: Signed, private_dirs: Path) -> None:
    bundle = signed.bundles[0]
    results = open_results(bundle, allowed_signers=signed.allowed)
    digest = hashlib.sha256(bundle.read_bytes()).hexdigest()
    cached = private_dirs / "cache" / "bundles" / digest
    assert results.sources == {"bundle": cached}
    assert (cached / "summary.json").read_bytes() == signed.run_dirs[0].summary_json.read_bytes()
    stamp = (cached / "plan.yaml").stat().st_mtime_ns
    again = open_results(bundle, allowed_signers=signed.allowed)  # verified again, not unpacked again
    assert again.sources == results.sources and (cached / "plan.yaml").stat().st_mtime_ns == stamp
    assert [p.name for p in cached.parent.iterdir()] == [digest]
    assert _files(private_dirs / "tmp") == []
    # 2 servers x 2 points x (1 warm-up + 3 measured waves) x B
    assert len(results.requests) == 2 * (1 + 2) * 4
    assert len(results.points) == 4 and len(results.servers) == 2 and len(results.verdicts) == 2


def test_the_headline_ratio_recomputed_from_the_requests_is_the_summary_s(signed: Signed) -> None:
    results = open_results(signed.bundles[0], allowed_signers=signed.allowed)
    requests = results.requests
    measured = requests[~requests.warmup]
    waves = measured.groupby(["server", "point_id", "wave"]).agg(
        tokens=("tokens_in_window", "sum"), window_s=("decode_window_s", "first")
    )
    totals = waves.groupby(["server", "point_id"]).sum()
    decode_tok_s = totals.tokens / totals.window_s
    shipped = json.loads(signed.run_dirs[0].summary_json.read_text())["bench"]["comparisons"]
    checked = 0
    for c in shipped:
        if c["metric"] == "decode_tok_s":
            recomputed = decode_tok_s[c["candidate"], c["point_id"]] / decode_tok_s[c["baseline"], c["point_id"]]
        elif c["metric"] == "tpot_s.p50":
            tpot = {
                s: measured[(measured.server == s) & (measured.point_id == c["point_id"])].tpot_s
                for s in ("candidate", "baseline")
            }
            recomputed = np.percentile(tpot[c["candidate"]], 50) / np.percentile(tpot[c["baseline"]], 50)
        else:
            continue
        assert recomputed == pytest.approx(c["ratio"], rel=1e-12, abs=0)
        checked += 1
    assert checked == 4  # two points, two metrics
    table = results.comparisons.set_index(["point_id", "metric"])
    for c in shipped:
        assert table.loc[(c["point_id"], c["metric"]), "ratio"] == c["ratio"]


def test_the_items_table_flips_exactly_what_byog_items_prints(signed: Signed) -> None:
    results = open_results(signed.bundles[0], allowed_signers=signed.allowed)
    items = results.items[results.items.task == "arithmetic_generated"]
    (shown,) = load_discordant(signed.bundles[0], task="arithmetic_generated", allowed_signers=signed.allowed)
    flipped = items[items.flipped]
    assert list(flipped.item_id) == sorted(i.item_id for i in shown.items)
    assert set(flipped[flipped.lost].item_id) == {i.item_id for i in shown.items if i.lost}
    assert len(items) == shown.n == len(ROWS) and len(flipped) == 4


def test_several_bundles_concatenate_named_by_source(signed: Signed) -> None:
    both = open_results(
        {"iteration 1": signed.bundles[0], "iteration 2": signed.bundles[1]}, allowed_signers=signed.allowed
    )
    one = open_results(signed.bundles[0], allowed_signers=signed.allowed)
    for name, table in both.tables.items():
        assert list(table.columns) == list(one.table(name).columns)
        assert set(table.source) <= {"iteration 1", "iteration 2"}
    assert both.requests.source.value_counts().to_dict() == {"iteration 1": 24, "iteration 2": 24}
    same_names = open_results(list(signed.bundles), allowed_signers=signed.allowed)
    assert list(same_names.sources) == ["bundle", "bundle#2"]


def test_an_untrusted_signer_is_refused_and_nothing_is_unpacked(signed: Signed, private_dirs: Path) -> None:
    stranger = allowed_signers(private_dirs / "stranger", [("someone@else", make_key(private_dirs, "x")[1])])
    with pytest.raises(CheckFailed, match=r"does not verify, so it is not opened: signature: "):
        open_results(signed.bundles[0], allowed_signers=stranger)
    assert _files(private_dirs / "cache") == [] and _files(private_dirs / "tmp") == []


def test_a_bundle_made_for_another_pr_is_refused(signed: Signed) -> None:
    with pytest.raises(CheckFailed, match="subject"):
        open_results(signed.bundles[0], allowed_signers=signed.allowed, subject_for="owner/repo#2")


def test_the_v1_fixture_opens_only_as_verify_reads_it(private_dirs: Path) -> None:
    bundle, allowed = V1 / "v1-bundle.tar.gz", V1 / "allowed_signers"
    with pytest.raises(CheckFailed, match="packed by an older byog"):
        open_results(bundle, allowed_signers=allowed)
    results = open_results(bundle, allowed_signers=allowed, allow_unsigned=True)
    assert set(results.points.server) == {"candidate", "baseline"} and len(results.comparisons) > 0


def test_what_is_not_a_run_or_a_bundle_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="neither a run directory nor a bundle"):
        open_results(tmp_path / "missing.tar.gz")
    with pytest.raises(UsageError, match="no plan.yaml"):
        open_results(tmp_path)


# --- hostile bundles: refused by open and export exactly as verify refuses them -------------------

HOSTILE = (
    "zip-polyglot",
    "pax-records",
    "unsigned-1.25mb",
    "sorted-order",
    "signer-late",
    "yaml-alias-bomb",
    "yaml-alias-bomb-untrusted",
    "markup-member-name",
    "forged-lines-untrusted",
    "deep-json",
    "non-utf8-json",
)


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_bundle_is_refused_by_open_and_export_as_verify_refuses_it(
    name: str, kit: Kit, private_dirs: Path
) -> None:
    (case,) = [c for c in CASES if c.name == name]
    built = case.build(kit)
    assert built.command == "verify" and not built.args
    report = verify_bundle(built.bundle, allowed_signers=kit.allowed)
    assert not report.verified
    sentence = f"{built.bundle} does not verify, so it is not opened: {one_line(report.failures[0], 300)}"
    with pytest.raises(CheckFailed) as refused:
        open_results(built.bundle, allowed_signers=kit.allowed)
    assert str(refused.value) == sentence
    out = private_dirs / "out"
    result = CliRunner().invoke(
        app, ["export", str(built.bundle), "--to", str(out), "--allowed-signers", str(kit.allowed)]
    )
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert "Traceback" not in result.output and len(lines) == 1 and "does not verify" in lines[0], result.output
    assert not out.exists()
    assert _files(private_dirs / "cache") == [] and _files(private_dirs / "tmp") == []


# --- docs/analysis.md's examples ------------------------------------------------------------------


def test_the_documented_examples_run(signed: Signed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = (REPO / "docs" / "analysis.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```$", doc, flags=re.S | re.M)
    assert len(blocks) >= 4
    monkeypatch.chdir(tmp_path)
    namespace = {"bundle": signed.bundles[0], "bundle_2": signed.bundles[1], "allowed": signed.allowed}
    for block in blocks:
        exec(compile(block, "docs/analysis.md", "exec"), namespace)
    assert (tmp_path / "tpot.png").stat().st_size > 1000
    assert len(namespace["headline"]) == 2  # type: ignore[arg-type]


def _loaded(statement: str) -> str:
    """Which of pandas and pyarrow a fresh interpreter holds after ``import byog`` and ``statement``."""
    probe = f"import sys, byog; {statement}; print(sorted(m for m in ('pandas', 'pyarrow') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_import_byog_and_the_cli_load_no_pandas() -> None:
    assert _loaded("byog.__version__") == "[]"
    assert "pandas" not in _loaded("from byog.cli import build_app; build_app()")  # byog --help
    assert "pandas" not in _loaded("byog.open")  # the API's module: pandas only once a table is built
