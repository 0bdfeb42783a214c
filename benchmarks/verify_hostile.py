"""The hostile-input table: every case of tests/support/hostile.py run as a `byog verify` process
(the reproduce cases as `byog reproduce --dry-run`) under a 3 GiB address-space limit; prints case,
exit, wall s, CPU s, peak MB and the refusal line; for a case refused before the signer is known,
also the CPU seconds of ``verify_bundle`` itself (``gate CPU s``: the process minus Python's start
and byog's imports), whose goal is 1 s.

    python benchmarks/verify_hostile.py [--cases NAME,...] [--show]

Peak MB is the largest resident memory of verify's whole process tree (sampled every 5 ms, and
each process's exact ru_maxrss); CPU s is the user + system time of that tree (what wall time
would be on an idle core: read it when the machine is loaded). Goals (the verify-hardening
issue): every case refused (or, where it says so, verified), wall <= 10 s, peak <= 1 GB, an
empty temp dir afterwards; a case refused before the signature is known (untrusted, or the
archive itself) within 2 s; a reproduce case runs nothing (its sentinel file is never made).
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.hostile import (
    CASES,
    PEAK_LIMIT_MB,
    REPRODUCE_CASES,
    WALL_LIMIT_S,
    Built,
    Kit,
    run_byog,
    table,
)


def _refusal(output: str, says: str) -> str:
    for line in output.splitlines():
        if says in line:
            return line.strip()[:150]
    return output.strip().splitlines()[-1][:150] if output.strip() else ""


BEFORE_SIGNATURE_S = 2.0
GATE_CPU_S = 1.0  # verify_bundle's own CPU for any refusal before the signer is known
_GATE_PROBE = (
    "import resource, sys\n"
    "from pathlib import Path\n"
    "from byog.bundles.verify import verify_bundle\n"
    "def cpu():\n"
    "    u = resource.getrusage(resource.RUSAGE_SELF)\n"
    "    return u.ru_utime + u.ru_stime\n"
    "start = cpu()\n"
    "verify_bundle(Path(sys.argv[1]), allowed_signers=Path(sys.argv[2]), allow_unsigned=sys.argv[3] == '1')\n"
    "print(f'{cpu() - start:.3f}')\n"
)


def _gate_cpu_s(kit: Kit, built: Built) -> float:
    """verify_bundle's CPU seconds in a fresh process (its imports done first, not counted)."""
    unsigned = "1" if "--allow-unsigned" in built.args else "0"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    probe = [sys.executable, "-c", _GATE_PROBE, str(built.bundle), str(kit.allowed), unsigned]
    done = subprocess.run(probe, env=env, capture_output=True, text=True, timeout=120, check=False)
    try:
        return float(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return float("nan")


_EARLY = ("FAIL archive", "FAIL manifest", "FAIL hashes", "FAIL signature")


def _before_signature(output: str) -> bool:
    """Refused before the signer is known: the archive or an ungated check failed, or the signer is untrusted.

    A trusted signer's bundle is read whole only after its signature held (``ok   signature``): an
    archive refusal then (10,001 members) is a refusal after the signature, held to the later goal."""
    lines = output.splitlines()
    if any(line.startswith("ok   signature") for line in lines):
        return False
    return "not checked: untrusted signer" in output or any(line.startswith(_EARLY) for line in lines)


def _with_gate_column(text: str, gate: dict[str, float]) -> str:
    """The table with a last column: verify_bundle's CPU s for the cases refused before the signature."""
    lines = text.splitlines()
    out = [lines[0] + " gate CPU s |", lines[1] + "------------|"]
    for line in lines[2:]:
        name = line.split("|")[1].strip()
        value = gate.get(name)
        cell = f"{value:>10.3f}" if value is not None and not math.isnan(value) else f"{'-':>10}"
        out.append(f"{line} {cell} |")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    parser.add_argument("--show", action="store_true", help="print each case's whole output")
    args = parser.parse_args()
    wanted = {name for name in args.cases.split(",") if name}
    started = time.perf_counter()
    # On a machine busier than its cores, wall time measures the neighbours: judge CPU time then.
    loaded = os.getloadavg()[0] > (os.cpu_count() or 1)
    with tempfile.TemporaryDirectory(prefix="byog-hostile-") as tmp:
        kit = Kit.create(Path(tmp) / "kit")
        outcomes, problems, refusals = [], [], []
        gate: dict[str, float] = {}
        base = run_byog(kit, Built(kit.folder / "base.tar.gz"), "unmodified bundle")
        outcomes.append(base)
        for case in [*CASES, *REPRODUCE_CASES]:
            if wanted and case.name not in wanted:
                continue
            built = case.build(kit)
            outcome = run_byog(kit, built, case.name)
            outcomes.append(outcome)
            refusals.append(f"{case.name}: {_refusal(outcome.output, case.says)}")
            if args.show:
                print(f"--- {case.name}\n{outcome.output}")
            if outcome.exit != case.exit or case.says not in outcome.output:
                problems.append(
                    f"{case.name}: exit {outcome.exit} (want {case.exit}), says {case.says!r}: "
                    f"{case.says in outcome.output}"
                )
            seconds = outcome.cpu_s if loaded else outcome.wall_s
            early = built.command == "verify" and _before_signature(outcome.output)
            limit = BEFORE_SIGNATURE_S if early else WALL_LIMIT_S
            if early:
                gate[case.name] = _gate_cpu_s(kit, built)
                if not gate[case.name] <= GATE_CPU_S:  # NaN (the probe failed) is a problem too
                    problems.append(f"{case.name}: verify_bundle took {gate[case.name]:.2f} s CPU before the signature")
            if outcome.ran:
                problems.append(f"{case.name}: it ran what the bundle asked for ({built.sentinel} exists)")
            if seconds > limit or outcome.peak_mb > PEAK_LIMIT_MB or outcome.temp_left:
                problems.append(
                    f"{case.name}: {seconds:.1f} s ({'CPU' if loaded else 'wall'}, limit {limit:g} s), "
                    f"{outcome.peak_mb:.0f} MB, temp left {outcome.temp_left}"
                )
            if built.bundle.name != "base.tar.gz":
                built.bundle.unlink(missing_ok=True)
    print(
        f"byog verify on hostile bundles; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; "
        f"total {time.perf_counter() - started:.0f} s; goals judged on {'CPU' if loaded else 'wall'} time"
    )
    print(_with_gate_column(table(outcomes), gate))
    print()
    print("\n".join(refusals))
    print()
    print(
        "PROBLEMS:\n" + "\n".join(problems)
        if problems
        else f"all as expected, each within {WALL_LIMIT_S:g} s ({BEFORE_SIGNATURE_S:g} s before the signature, "
        f"verify_bundle's own CPU <= {GATE_CPU_S:g} s) and {PEAK_LIMIT_MB:.0f} MB, temp dirs empty"
    )


if __name__ == "__main__":
    main()
