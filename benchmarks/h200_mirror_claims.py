"""Fill the h200-kimi-mirror claims from the H200 run, and show verify holding and failing them.

    python benchmarks/h200_mirror_claims.py fill SUMMARY_JSON      # values from summary.json, in place
    python benchmarks/h200_mirror_claims.py check BUNDLE           # verify --claims passes; moved 5%: fails
    python benchmarks/h200_mirror_claims.py show                   # the claims as a table

``fill`` computes every pending claim (``not_checked`` still set) exactly as ``byog verify``
computes it (``byog.bundles.checks.claims.measured``), writes the value rounded to 5 significant
digits (0.001% at most, far inside the 3% tolerance) and removes ``not_checked``; comments and
layout are kept. A claim whose point is missing stays pending. ``check`` runs ``byog verify
BUNDLE --claims`` on the file (must pass), then on a copy where every candidate (spec-tp1) value
is moved +5% (must fail, naming the claims).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from byog.analysis.claims import measured
from byog.core.errors import CheckFailed
from byog.schemas.claims import ClaimsFile, RatioClaim, ValueClaim
from byog.schemas.summary import read_summary

CLAIMS = REPO / "byog" / "plans" / "claims" / "h200-kimi-mirror.claims.yaml"
CANDIDATE = "spec-tp1"
PENDING_LITERAL = '"not measured yet: filled from the H200 run by benchmarks/h200_mirror_claims.py fill"'


def _blocks(text: str) -> tuple[str, list[str]]:
    """The file's head and one text block per claim (split at each ``  - name:``)."""
    parts = re.split(r"(?m)^(?=  - name: )", text)
    return parts[0], parts[1:]


def fill(summary_path: Path, claims_path: Path = CLAIMS) -> int:
    summary = read_summary(summary_path)
    text = claims_path.read_text(encoding="utf-8")
    claims = ClaimsFile.model_validate(yaml.safe_load(text)).claims
    head, blocks = _blocks(text)
    assert len(blocks) == len(claims), "one '  - name:' block per claim"
    filled = 0
    out = []
    for claim, block in zip(claims, blocks, strict=True):
        # aliases of a removed anchor would break: every pending line is written out literally
        block = re.sub(r"(?m)^    not_checked: (&pending )?.*$", f"    not_checked: {PENDING_LITERAL}", block)
        if claim.not_checked and isinstance(claim, (ValueClaim, RatioClaim)):
            try:
                value = measured(summary, claim)
            except CheckFailed as err:
                print(f"pending: {claim.name}: {err}")
            else:
                block = re.sub(r"(?m)^    value: .*$", f"    value: {float(f'{value:.5g}')!r}", block)
                block = re.sub(r"(?m)^    not_checked: .*\n", "", block)
                filled += 1
        out.append(block)
    claims_path.write_text(head + "".join(out), encoding="utf-8")
    ClaimsFile.model_validate(yaml.safe_load(claims_path.read_text(encoding="utf-8")))
    print(f"filled {filled} of {len(claims)} claims in {claims_path}")
    return 0


def _verify(bundle: Path, claims: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "byog", "verify", str(bundle), "--claims", str(claims), "--allow-unsigned"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )


def moved_text(text: str, factor: float = 1.05) -> str:
    """The claims file with every measured candidate (spec-tp1) value multiplied by ``factor``."""
    claims = ClaimsFile.model_validate(yaml.safe_load(text)).claims
    head, blocks = _blocks(text)
    moved = []
    for claim, block in zip(claims, blocks, strict=True):
        if isinstance(claim, ValueClaim) and claim.server == CANDIDATE and not claim.not_checked:
            block = re.sub(r"(?m)^    value: .*$", f"    value: {claim.value * factor!r}", block)
        moved.append(block)
    return head + "".join(moved)


def check(bundle: Path, claims_path: Path = CLAIMS) -> int:
    held = _verify(bundle, claims_path)
    print(f"verify --claims {claims_path.name}: exit {held.returncode}")
    print(held.stdout[-3000:])
    with tempfile.TemporaryDirectory() as tmp:
        moved_path = Path(tmp) / "moved-5pct.claims.yaml"
        moved_path.write_text(moved_text(claims_path.read_text(encoding="utf-8")), encoding="utf-8")
        failed = _verify(bundle, moved_path)
    print(f"verify with every {CANDIDATE} value moved +5%: exit {failed.returncode} (must be non-zero)")
    print(failed.stdout[-3000:])
    return 0 if held.returncode == 0 and failed.returncode != 0 else 1


def show(claims_path: Path = CLAIMS) -> int:
    for claim in ClaimsFile.model_validate(yaml.safe_load(claims_path.read_text(encoding="utf-8"))).claims:
        if isinstance(claim, (ValueClaim, RatioClaim)):
            state = "pending" if claim.not_checked else f"{claim.value:g} ± {claim.tolerance:.0%}"
            print(f"{claim.name:55s} {claim.metric:16s} {state}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("fill").add_argument("summary", type=Path)
    sub.add_parser("check").add_argument("bundle", type=Path)
    sub.add_parser("show")
    args = parser.parse_args()
    if args.cmd == "fill":
        return fill(args.summary)
    if args.cmd == "check":
        return check(args.bundle)
    return show()


if __name__ == "__main__":
    raise SystemExit(main())
