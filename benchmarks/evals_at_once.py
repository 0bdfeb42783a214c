"""Two servers' evals at once vs one server at a time, from the phases each run records.

    python benchmarks/evals_at_once.py [--items 64] [--delay 0.5] [--looks 0.5 1.0 --margin 10]

Two loopback fake vLLM servers (``tests/support/fake_vllm.py``: each completion held ``--delay`` s at
the server, requests served concurrently) run ``byog run``'s measuring loop (``byog.pipeline.run``)
on a plan with one eval (arithmetic_generated, ``--items`` items, 1 pass; lm-eval through byog's
adapter), twice: the servers declared on GPUs 1 and 0 (``CUDA_VISIBLE_DEVICES``; the fakes do not
read it), then with no GPUs declared. It prints each run's choice and, from its phases.json, each
server's eval phase, their overlap and the evals' share of the wall (the union of the eval phases).
With ``--looks`` the eval is group-sequential (``--margin`` points): both fakes answer alike, so the
gate stops at a look, and the table adds the items each server ran (at once: both in the same looks,
``byog.evals.lockstep``; one at a time: the earlier server every item, the later one to the stop).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from byog.analysis.phases import read_phases
from byog.analysis.time_to_verdict import union_length
from byog.core.paths import RunDir
from byog.pipeline import launch
from byog.pipeline import run as run_module
from byog.plans.load import parse_plan
from byog.runtimes.record import utc_now, write_server_record
from byog.schemas.server import PreparedModel, ServerRecord
from tests.support.fake_vllm import FakeVllm
from tests.support.interleave_run import FakeServer
from tests.support.reporter import RecordingReporter

PLAN = """\
name: at-once
model: {{path: "builtin:smollm2-135m-instruct"}}
servers:
  cand: {cand}
  stock: {stock}
baseline: stock
evals:
  - {{task: arithmetic_generated, limit: {items}, passes: 1{looks}}}
"""


def _items_run(rd: RunDir, server: str) -> int:
    return int(json.loads(rd.eval_results(server, "arithmetic_generated").read_text())["n_items"])


def _run(folder: Path, text: str, delay: float) -> tuple[list[str], dict[str, tuple[float, float]], dict[str, int]]:
    fakes = {"stock": FakeVllm(delay_s=delay), "cand": FakeVllm(delay_s=delay)}

    class Runtime:
        def launch(self, name: str, config: Any, model: PreparedModel, server_dir: Path) -> Any:
            del config, model  # the fake serves whatever it is asked
            record = {"name": name, "starts": [{"started_at": utc_now(), "ready_after_s": 0.0}]}
            write_server_record(server_dir / "server.json", ServerRecord.model_validate(record))
            return FakeServer(name, fakes[name])

    launch.runtime_for = lambda _: Runtime()  # type: ignore[assignment]
    model = PreparedModel(path="m", served_name="fake", tokenizer="m")
    run_module.prepare_model = lambda _: model  # type: ignore[assignment]
    run_module.environment_fingerprint = lambda: {"gpu": {"available": False, "reason": "loopback fakes"}}
    rd = RunDir(folder)
    folder.mkdir(parents=True)
    rd.plan_yaml.write_text(text)
    reporter = RecordingReporter()
    try:
        run_module._measure(parse_plan(text, "plan.yaml"), rd, None, reporter)
    finally:
        for fake in fakes.values():
            fake.close()
    log = read_phases(rd)
    assert log is not None
    spans = {p.server: (p.t0_unix_s, p.t1_unix_s) for p in log.phases if p.kind == "eval"}
    items = {server: _items_run(rd, server) for server in fakes}
    return [line for line in reporter.lines if line.startswith("evals of")], spans, items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=64)
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--looks", type=float, nargs="+", help="the eval's looks (fractions of --items)")
    parser.add_argument("--margin", type=float, default=10.0, help="the eval's margin in points, with --looks")
    args = parser.parse_args()
    looks = f", looks: {args.looks}, margin: {args.margin}" if args.looks else ""
    declared = {"cand": '{env: {CUDA_VISIBLE_DEVICES: "1"}}', "stock": '{env: {CUDA_VISIBLE_DEVICES: "0"}}'}
    print(
        "| GPUs | choice | eval cand s | eval stock s | overlap s | evals wall s (union) | sum s | items cand / stock |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="byog-at-once-") as tmp:
        for label, servers in (("declared 1 / 0", declared), ("undeclared", {"cand": "{}", "stock": "{}"})):
            text = PLAN.format(items=args.items, looks=looks, **servers)
            said, spans, items = _run(Path(tmp) / label.replace(" ", "-").replace("/", ""), text, args.delay)
            (c0, c1), (s0, s1) = spans["cand"], spans["stock"]
            overlap = max(0.0, min(c1, s1) - max(c0, s0))
            union = union_length([spans["cand"], spans["stock"]])
            print(
                f"| {label} | {said[0].split(':')[0]} | {c1 - c0:.1f} | {s1 - s0:.1f} | {overlap:.1f} | {union:.1f} "
                f"| {c1 - c0 + s1 - s0:.1f} | {items['cand']} / {items['stock']} |"
            )


if __name__ == "__main__":
    main()
