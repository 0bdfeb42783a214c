"""An A/A calibration of launch-to-launch variance, and its use by a later one-launch run
(docs/statistics.md §6).

``byog calibrate PLAN`` runs the plan with R >= 3 launches of every server in ABBA order; from
that run, per server, point and headline metric, the spread of z_l = ln stat(launch l) is
s^2 = sum_l (z_l - zbar)^2 / (R - 1) with R - 1 degrees of freedom (``spreads``). A later run of
the same plan with one launch per side on the same fingerprint (``byog run --calibration FILE``
copies the file into the run as calibration.json) pools the two servers' spreads into the launch
t interval (``perf_equivalence.launch_t_ci``): s_cal^2 = sum(df s^2) / sum(df), df_cal = sum(df).

The fingerprint is three sha256 digests of canonical JSON, each recomputed from a run directory:

- hardware: env.json's CPU (model, cores), memory, machine architecture and GPUs (name, memory,
  count, driver);
- software: env.json's Python and package versions, and each server's vLLM version and image
  (servers/<name>/server.json);
- servers: per server, the plan's server entry, the model and the bench points' waves.

A calibration applies only where all three match (``fingerprint_differences``); verify refuses
a bundle whose calibration.json names another fingerprint (bundles/checks/calibration.py).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from byog.analysis.perf_equivalence import LaunchVariance
from byog.core.canonical import canonical_json
from byog.core.errors import ByogError
from byog.core.io import read_json
from byog.core.paths import RunDir
from byog.schemas.calibration import Calibration, Fingerprint, LaunchSpread
from byog.schemas.plan import BatchWorkload, Plan

CALIBRATION_NAME = "calibration.json"
MIN_LAUNCHES = 3


class CalibrationError(ByogError):
    """A calibration file that cannot be read, or does not belong to the run."""


def _digest(value: Any) -> str:
    return hashlib.sha256(canonical_json(value, label="fingerprint")).hexdigest()


def _read(path: Any) -> dict[str, Any]:
    try:
        data = read_json(path)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _part(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _hardware(env: dict[str, Any]) -> dict[str, Any]:
    gpu = _part(env.get("gpu"))
    gpus = gpu.get("gpus") if isinstance(gpu.get("gpus"), list) else env.get("gpus")
    os_part = env.get("os")
    return {
        "cpu": env.get("cpu"),
        "cpu_count": env.get("cpu_count"),
        "memory_total_bytes": env.get("memory_total_bytes"),
        "machine": _part(os_part).get("machine") if isinstance(os_part, dict) else os_part,
        "gpu_count": gpu.get("count"),
        "gpu_driver": gpu.get("driver_version"),
        "gpus": [
            {"name": g.get("name"), "memory_total_bytes": g.get("memory_total_bytes")}
            for g in (gpus if isinstance(gpus, list) else [])
            if isinstance(g, dict)
        ],
    }


def fingerprint(run_dir: RunDir, plan: Plan) -> Fingerprint:
    """The hardware, software and server-configuration digests of a run directory (module docstring)."""
    env = _read(run_dir.env_json)
    records = {name: _read(run_dir.server_record(name)) for name in plan.servers}
    software = {
        "python": env.get("python"),
        "packages": env.get("packages"),
        "servers": {name: {"version": r.get("version"), "image": r.get("image")} for name, r in records.items()},
    }
    waves = sorted({(w.name, w.warmup_waves, w.waves) for w in plan.workloads if isinstance(w, BatchWorkload)}, key=str)
    servers = {
        name: _digest(
            {
                "server": spec.model_dump(mode="json"),
                "model": plan.model.model_dump(mode="json"),
                "waves": [list(w) for w in waves],
            }
        )
        for name, spec in plan.servers.items()
    }
    return Fingerprint(hardware=_digest(_hardware(env)), software=_digest(software), servers=servers)


def fingerprint_differences(calibration: Calibration, run_dir: RunDir, plan: Plan) -> list[str]:
    """What of the calibration's fingerprint differs from the run's ([] when it belongs to the run)."""
    here = fingerprint(run_dir, plan)
    theirs = calibration.fingerprint
    out = [part for part in ("hardware", "software") if getattr(theirs, part) != getattr(here, part)]
    compared = [(c, b) for c, b in plan.comparisons]
    for name in dict.fromkeys(n for pair in compared for n in pair):
        if theirs.servers.get(name) != here.servers.get(name):
            out.append(f"server '{name}' configuration")
    return out


def launch_spreads(
    launches_of: Mapping[tuple[str, str], Sequence[Sequence[Any]]],
    stat_of: Callable[[str, str], Callable[[Sequence[Any]], float | None]],
    metrics: Sequence[str],
) -> list[LaunchSpread]:
    """Per (server, point) with two launches or more and per metric: s^2 of ln stat(launch)."""
    out = []
    for (server, point_id), launches in sorted(launches_of.items()):
        for metric in metrics:
            stat = stat_of(point_id, metric)
            logs = [math.log(v) for v in (stat(launch) for launch in launches) if v is not None and v > 0]
            if len(logs) < 2:
                continue
            mean = math.fsum(logs) / len(logs)
            var = math.fsum((z - mean) ** 2 for z in logs) / (len(logs) - 1)
            waves = min(len(launch) for launch in launches)
            out.append(
                LaunchSpread(server=server, point_id=point_id, metric=metric, var=var, df=len(logs) - 1, waves=waves)
            )
    return out


def read_calibration(run_dir: RunDir) -> Calibration | None:
    """The run's calibration.json, or None when it has none (CalibrationError when it is unreadable)."""
    path = run_dir.root / CALIBRATION_NAME
    if not path.is_file():
        return None
    return load_calibration(path)


def load_calibration(path: Any) -> Calibration:
    try:
        return Calibration.model_validate(read_json(path))
    except (OSError, ValueError, ValidationError) as e:
        first = str(e).splitlines()[0][:200]
        raise CalibrationError(f"{path} is not a byog calibration file: {first}") from None


def launch_prior(
    calibration: Calibration, servers: tuple[str, str], point_id: str, metric: str
) -> LaunchVariance | None:
    """The pooled launch variance of the pair's servers at this point and metric, or None when the
    calibration did not measure both."""
    found = [s for s in calibration.spreads if s.server in servers and s.point_id == point_id and s.metric == metric]
    if {s.server for s in found} != set(servers):
        return None
    df = sum(s.df for s in found)
    return LaunchVariance(var=math.fsum(s.df * s.var for s in found) / df, df=df)


def calibration_note(calibration: Calibration) -> str:
    """The citation a calibrated CI carries: when, what fingerprint, how many launches."""
    return (
        f"launch-to-launch variance from the calibration of {calibration.created_at[:10]} "
        f"(R = {calibration.launches}, hardware {calibration.fingerprint.hardware[:12]}, "
        f"software {calibration.fingerprint.software[:12]})"
    )
