"""A run directory of an eval with operating points [1, 64] in the real file formats (verify's strata
check, the summary's and the report's per-stratum lines)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from byog.analysis.strata import operating_point
from byog.core.paths import RunDir
from byog.schemas.evals import write_eval_items
from tests.support.synthetic import SyntheticSpec, make_run_dir, plan_yaml

SPEC = SyntheticSpec(batch_sizes=(1,), eval_items=400)
POINTS = [1, 64]


def _items(server: str, moved: int = 0) -> list[dict[str, Any]]:
    """Half the items right on both servers; the candidate wrong on 60 of them in stratum 64 only.
    ``moved``: that many stratum-64 rows recorded as run at 1."""
    rows = []
    flipped = 0
    for n in range(SPEC.eval_items):
        item_id, sha = f"test:{n}", hashlib.sha256(f"item {n}".encode()).hexdigest()
        point = operating_point(item_id, sha, POINTS)
        score = float(n % 2)
        if server == "candidate" and score == 1.0 and point == 64 and flipped < 60:
            score, flipped = 0.0, flipped + 1
        if point == 64 and moved:
            point, moved = 1, moved - 1
        row = {"item_id": item_id, "item_sha256": sha, "pass_index": 0, "seed": SPEC.seed, "score": score}
        rows.append(row | {"extracted_answer": "1", "target": "1", "num_concurrent": point})
    return rows


def stratified_run(tmp_path: Path, moved: int = 0) -> RunDir:
    """gsm8k at operating points [64, 1] on candidate and baseline (``moved``: candidate rows out of stratum)."""
    text = plan_yaml(SPEC).replace("    margin: 3.0\n", "    margin: 5.0\n    operating_points: [64, 1]\n")
    run_dir = make_run_dir(tmp_path / "run", SPEC, plan_text=text)
    for server in ("candidate", "baseline"):
        write_eval_items(run_dir.eval_items(server, "gsm8k"), _items(server, moved if server == "candidate" else 0))
    return run_dir
