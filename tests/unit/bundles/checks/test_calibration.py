"""verify's calibration check: a bundle whose calibration.json was measured on its own hardware,
software and servers verifies, its one-launch CIs widened and citing it; one from another
fingerprint fails the check in one sentence."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from byog.analysis.calibration import CALIBRATION_NAME, fingerprint
from byog.analysis.stats import t_quantile
from byog.bundles.finalize import seal_and_pack
from byog.bundles.verify import verify_bundle
from byog.core.io import atomic_write_json
from byog.core.reporter import NullReporter
from byog.pipeline.derive import derive_and_write
from byog.plans.expand import expand_plan
from byog.plans.load import parse_plan
from byog.schemas.calibration import Calibration, LaunchSpread
from byog.schemas.summary import read_summary
from tests.support.keys import allowed_signers, make_key
from tests.support.synthetic import SyntheticSpec, make_run_dir

SPEC = SyntheticSpec(batch_sizes=(1,), eval_items=4)


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("calibration")
    key, pub = make_key(folder, "contributor")
    out = {"signers": allowed_signers(folder / "allowed_signers", [("contributor@example.com", pub)])}
    for name in ("own", "other"):
        rd = make_run_dir(folder / f"run-{name}", SPEC)
        plan = parse_plan(rd.plan_yaml.read_text(encoding="utf-8"), "plan.yaml")
        fp = fingerprint(rd, plan)
        if name == "other":  # the same calibration measured on other hardware
            fp = fp.model_copy(update={"hardware": "0" * 64})
        spreads = [
            LaunchSpread(server=server, point_id=point.point_id, metric="decode_tok_s", var=0.03**2, df=2, waves=3)
            for point in expand_plan(plan)
            for server in plan.servers
        ]
        calibration = Calibration(
            created_at="2026-12-01T10:00:00Z", plan_name=plan.name, launches=3, fingerprint=fp, spreads=spreads
        )
        atomic_write_json(rd.root / CALIBRATION_NAME, calibration.model_dump(mode="json"))
        derive_and_write(rd.root, NullReporter())
        rd.plots_dir.mkdir(exist_ok=True)
        out[name] = seal_and_pack(rd, folder / f"{name}.tar.gz", key=key, plots=None).bundle
        out[f"{name}-run"] = rd.root
    return out


def test_a_calibration_of_the_bundles_own_fingerfpverifies_and_widens_its_cis(bundles: dict[str, Path]) -> None:
    report = verify_bundle(bundles["own"], allowed_signers=bundles["signers"])
    (check,) = [r for r in report.results if r.name == "calibration"]
    assert report.verified and check.status == "pass" and check.message.startswith("calibration of 2026-12-01 (R = 3)")
    summary = read_summary(bundles["own-run"] / "summary.json")
    decode = [c for c in summary.bench.comparisons if c.metric == "decode_tok_s"]
    # two servers x 2 df of launch spread 3%: SE = 3% x sqrt(2), t(0.975, 4) = 2.776
    assert decode and all(c.ci_df == 4 and c.units == "launches" and c.label is None for c in decode)
    assert all(c.ci_note and "calibration of 2026-12-01 (R = 3" in c.ci_note for c in decode)
    width = math.exp(2 * t_quantile(0.975, 4) * 0.03 * math.sqrt(2))
    assert all(c.ci_low and c.ci_high and c.ci_high / c.ci_low == pytest.approx(width) for c in decode)


def test_a_calibration_from_another_fingerfpis_refused(bundles: dict[str, Path]) -> None:
    report = verify_bundle(bundles["other"], allowed_signers=bundles["signers"])
    (check,) = [r for r in report.results if r.name == "calibration"]
    assert not report.verified and check.status == "fail"
    assert check.message == (
        "calibration.json (2026-12-01, R = 3) was measured on another hardware than this bundle's: its launch "
        "variance does not apply here"
    )
