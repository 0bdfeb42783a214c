"""Issue 47 items 4-6, before and after: each hostile case run against a byog tree, counted as
accepted (verified, paired, rendered, printed live, built) or refused (one sentence, escaped).

    python benchmarks/hostile_47b.py [--byog-root PATH]   # default: this checkout

``--byog-root /work/main`` measures a tree without these fixes: the cases (and the test support
they use) come from this checkout, the byog package from that root. Only APIs both trees have are
called, so a case counts what the code does, not whether a new function exists.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _identity_cases(folder: Path) -> dict[str, bool]:
    """True: verify accepted the bundle (or the commit check did not fail)."""
    from byog.bundles.verify import verify_bundle
    from tests.support.synthetic import SyntheticSpec, make_run_dir
    from tests.unit.bundles.checks.test_identity import (
        COMMIT,
        HOSTILE_IDENTITIES,
        OTHER,
        _nodes,
        edit_server,
        identity,
        pack,
    )

    out = {}
    for index, (case, (changes, _)) in enumerate(HOSTILE_IDENTITIES.items()):
        where = folder / f"id{index}"
        where.mkdir()
        rd = make_run_dir(where / "run", SyntheticSpec(batch_sizes=(1,), eval_items=5))
        for name in ("candidate", "baseline"):
            edit_server(rd, name, identity=identity())
        bundle, allowed = pack(where, rd, forged=changes)
        out[f"identity: {case}"] = verify_bundle(bundle, allowed_signers=allowed).verified
    for label, subject, wanted, changes in (
        ("--for OWNER/REPO@SHA (no #N) with another commit measured", f"octo/repo@{OTHER}", f"octo/repo@{OTHER}", {}),
        ("nodes ran the head, rank 0 another commit", "octo/repo#5", f"octo/repo#5@{COMMIT}", _nodes(OTHER, COMMIT)),
    ):
        where = folder / f"for{len(out)}"
        where.mkdir()
        rd = make_run_dir(where / "run", SyntheticSpec(batch_sizes=(1,), eval_items=5))
        for name in ("candidate", "baseline"):
            edit_server(rd, name, **{"identity": identity(), **(changes if name == "candidate" else {})})
        bundle, allowed = pack(where, rd, subject=subject)
        report = verify_bundle(bundle, allowed_signers=allowed, subject_for=wanted)
        out[f"commit: {label}"] = not any(f.startswith("commit:") for f in report.failures)
    return out


def _interleave_cases(folder: Path) -> dict[str, bool]:
    """True: the summary paired the point by ABBA block on the labels."""
    from byog.analysis.bench_summary import summarize_bench
    from byog.core.paths import RunDir
    from byog.plans.load import parse_plan
    from tests.support.hostile_47 import HOSTILE_ORDERS, batch_id
    from tests.support.interleave_run import interleaved_sweep

    original = folder / "sweep"
    original.mkdir()
    interleaved_sweep(original)
    out = {}
    for case, (edit, _) in HOSTILE_ORDERS.items():
        shutil.copytree(original, folder / case)
        rd = RunDir(folder / case)
        edit(rd)
        plan = parse_plan((rd.root / "plan.yaml").read_text(), "plan.yaml")
        try:
            units = {c.point_id: c.units for c in summarize_bench(rd, plan).comparisons if c.metric == "decode_tok_s"}
            out[f"interleave: {case}"] = units.get(batch_id()) == "ABBA blocks"
        except Exception:
            out[f"interleave: {case}"] = False
    return out


def _time_cases(folder: Path) -> dict[str, bool]:
    """True: time_to_verdict computed (and a report would render) from the impossible record."""
    from byog.analysis.time_to_verdict import time_to_verdict
    from byog.core.paths import RunDir
    from byog.runtimes.record import write_server_record
    from tests.support.hostile_47 import HOSTILE_TIMES, PLAN

    out = {}
    for index, (case, (record, _)) in enumerate(HOSTILE_TIMES.items()):
        rd = RunDir(folder / f"ttv{index}")
        write_server_record(rd.server_record("cand"), record.model_dump(mode="json"))
        try:
            out[f"time to verdict: {case}"] = time_to_verdict(rd, PLAN) is not None
        except Exception:
            out[f"time to verdict: {case}"] = False
    return out


def _console_cases() -> dict[str, bool]:
    """True: a raw ESC, C1 or U+202E reached the console, or a forged line started a line."""
    from rich.console import Console

    from byog.cli.console_reporter import ConsoleReporter
    from byog.core.reporter import Table
    from tests.support.hostile_47 import CLEAR, CSI_C1, FORGED, OSC8, RLO

    out = {}
    for name, hostile in (
        ("OSC 8", OSC8),
        ("clear-screen", CLEAR),
        ("U+202E", RLO),
        ("forged line", FORGED),
        ("C1 CSI", CSI_C1),
    ):
        for terminal in (True, False):
            buffer = io.StringIO()
            reporter = ConsoleReporter(Console(file=buffer, force_terminal=terminal, width=200, color_system=None))
            reporter.line(hostile)
            reporter.table(Table(hostile, ["v"]).with_row(hostile))
            text = buffer.getvalue()
            live = any(c in text for c in ("\x1b", "\x9b", "\u202e")) or any(
                line.lstrip("│| ").startswith("ok   signature") for line in text.splitlines()
            )
            out[f"console {'terminal' if terminal else 'pipe'}: {name}"] = live
    return out


def _inspect_case() -> dict[str, bool]:
    from typer.testing import CliRunner

    from byog.cli import app, images
    from tests.unit.cli.test_images import info

    images.inspect_image = lambda *_, **__: info()  # type: ignore[assignment]
    output = CliRunner().invoke(app, ["image", "inspect", "evil:latest", "--no-probe"]).output
    return {"image inspect: hostile labels": "\x1b" in output or "\u202e" in output}


def _items_case(folder: Path) -> dict[str, bool]:
    """True: the piped markdown of `byog items` renders a live image, link or mention on GitHub."""
    from typer.testing import CliRunner

    from byog.analysis.summary import derive_summary
    from byog.cli import app
    from byog.core.io import atomic_write_json
    from tests.support.bundles_kit import TINY
    from tests.support.cmark import render_gfm
    from tests.support.flipped import HOSTILE_ANSWER, arithmetic_rows, write_task
    from tests.support.synthetic import make_run_dir

    rows = arithmetic_rows(20)
    rd = make_run_dir(folder / "items", TINY)
    write_task(rd, "candidate", "arithmetic_generated", rows, set(range(12)), answer_of=lambda _: HOSTILE_ANSWER)
    write_task(rd, "baseline", "arithmetic_generated", rows, set(range(2, 14)))
    atomic_write_json(rd.summary_json, derive_summary(rd).to_json())
    output = CliRunner().invoke(app, ["items", str(rd.root), "--task", "arithmetic_generated"]).output
    html = render_gfm(output)
    return {"items piped: live markdown": any(live in html for live in ("<img", "<a ", "@octocat"))}


def _wheel_cases(folder: Path) -> dict[str, bool]:
    """True: the name was accepted (and, for the Dockerfile case, a line beyond FROM/COPY/RUN/LABEL made)."""
    from byog.images.wheel import WheelIdentity, read_wheel_identity
    from byog.images.wheel_layer import wheel_dockerfile
    from tests.unit.images.test_wheel import make_wheel

    out = {}
    names = [
        "vllm-0.32.0-py3-none-any\nRUN touch pwned.whl",
        "vllm-0.32.0-py3-none-any .whl",
        'vllm-0.32.0-py3-none-any";x.whl',
        "vllm-0.32.0-py3-none-any;x.whl",
    ]
    for index, name in enumerate(names):
        where = folder / f"w{index}"
        where.mkdir()
        wheel = make_wheel(where / "w.whl", "0.32.0", None).rename(where / name)
        try:
            found = read_wheel_identity(wheel)
            text = wheel_dockerfile("gpu", found, "sha256:" + "c" * 64, {})
            out[f"wheel name: {name!r}"] = True if "\n" in name else '"' in text or ";" in text
        except Exception:
            out[f"wheel name: {name!r}"] = False
    forged = WheelIdentity(names[0], "a" * 64, "0.32.0", None, "no commit")
    try:
        lines = wheel_dockerfile("gpu", forged, "sha256:" + "c" * 64, {}).splitlines()
        out["Dockerfile: a newline in the name"] = any(line.startswith("RUN touch") for line in lines)
    except Exception:
        out["Dockerfile: a newline in the name"] = False
    bomb = folder / "vllm-0.32.0-py3-none-any.whl"
    with (
        zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as archive,
        archive.open("vllm-0.32.0.dist-info/METADATA", "w", force_zip64=True) as member,
    ):
        member.write(b"Metadata-Version: 2.1\nName: vllm\nVersion: 0.32.0\n")
        for _ in range(256):
            member.write(b"\0" * (1 << 20))
    # VmHWM: this process's own peak (ru_maxrss would carry the parent's peak across fork and exec)
    code = "import sys;from byog.images.wheel import read_wheel_identity as r;from pathlib import Path\n"
    code += "try: r(Path(sys.argv[1]))\nexcept Exception: pass\n"
    code += "print(next(int(x.split()[1]) for x in open('/proc/self/status') if x.startswith('VmHWM')) // 1024)"
    done = subprocess.run(
        [sys.executable, "-c", code, str(bomb)], capture_output=True, text=True, env=os.environ.copy()
    )
    peak_mb = int(done.stdout.strip() or 0)
    print(f"METADATA bomb ({bomb.stat().st_size // 1024} kB wheel, 256 MiB inflated): peak RSS {peak_mb} MB")
    out["METADATA bomb inflated whole (peak RSS > 200 MB)"] = peak_mb > 200
    return out


def _dropped_cases() -> dict[str, bool]:
    """True: the field left the reproduction without being listed."""
    from byog.plans.load import parse_plan
    from byog.plans.subset import Overrides, Selection, dropped, reproduction_plan
    from tests.unit.plans.test_subset import PAIRED

    bundle = parse_plan(PAIRED, "plan")
    built = reproduction_plan(bundle, Overrides(), Selection([], ["candidate", "baseline"], 3))
    listed = {d.what for d in dropped(bundle, built)}
    return {
        f"reproduce drops {f} silently": f not in listed
        for f in ("pairs[0].interleave", "evals[0].passes", "model.weights_gib")
    }


def measure() -> dict[str, bool]:
    with tempfile.TemporaryDirectory(prefix="byog-47b-") as tmp:
        folder = Path(tmp)
        cases: list[Callable[[], dict[str, Any]]] = [
            lambda: _identity_cases(folder),
            lambda: _interleave_cases(folder),
            lambda: _time_cases(folder),
            _console_cases,
            _inspect_case,
            lambda: _items_case(folder),
            lambda: _wheel_cases(folder),
            _dropped_cases,
        ]
        found: dict[str, bool] = {}
        for run in cases:
            found.update(run())
        return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--byog-root", type=Path, default=REPO)
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        found = measure()
        for case, accepted in found.items():
            print(f"{'ACCEPTED' if accepted else 'refused '}  {case!r}")
        print(json.dumps({"accepted": sum(found.values()), "refused": len(found) - sum(found.values())}))
        return
    with tempfile.TemporaryDirectory(prefix="byog-47b-path-") as tmp:
        (Path(tmp) / "byog").symlink_to(args.byog_root.resolve() / "byog")
        (Path(tmp) / "tests").symlink_to(REPO / "tests")
        env = {**os.environ, "PYTHONPATH": tmp, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
        subprocess.run([sys.executable, str(Path(__file__).resolve()), "--inner"], env=env, check=True, cwd=tmp)


if __name__ == "__main__":
    main()
