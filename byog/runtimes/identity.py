"""A server's identity for server.json: ``identity_probe`` run where the server runs, its JSON read back.

Every runtime hands this module a way to run a command where its server runs (a subprocess here,
``exec`` in a container, a node's ``run``); the probe itself is standard library only, so it
needs nothing of byog there. A probe that fails is recorded as ``{"error": ...}``: the run goes on,
and verify's pair check then says the pair's code or weights cannot be compared.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from byog.core.settings import cache_dir
from byog.runtimes import identity_probe
from byog.schemas.server import PreparedModel

# Hashing a checkpoint once per host is a read of every byte (~1 TB at ~2 GB/s: ~10 minutes).
PROBE_TIMEOUT_S = 3600.0
REMOTE_CACHE_DIR = "~/.cache/byog"  # a remote node's own cache (the probe expands ~ there)

Runner = Callable[[list[str]], tuple[int, str]]


def parse_probe(code: int, out: str) -> dict[str, Any]:
    """The probe's JSON line, or ``{"error": ...}`` naming why there is none."""
    if code != 0:
        return {"error": f"the identity probe exited {code}: {out.strip()[-300:]}"}
    try:
        found = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": f"unreadable identity probe output: {out.strip()[-300:]}"}
    return found if isinstance(found, dict) else {"error": "the identity probe printed no JSON object"}


def probe_identity(
    run: Runner, python: str, model: PreparedModel | None, *, cache: str | None, weights: bool = True
) -> dict[str, Any]:
    """Run the probe with ``python`` through ``run``; ``weights=False`` reads the code only."""
    path = model.path if model is not None and weights else None
    tokenizer = model.tokenizer if model is not None and weights else None
    return parse_probe(*run(identity_probe.probe_argv(python, path, tokenizer, cache)))


def run_here(argv: list[str]) -> tuple[int, str]:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as err:
        return 127, str(err)
    return done.returncode, done.stdout + done.stderr


def local_identity(python: str, model: PreparedModel) -> dict[str, Any]:
    """The identity of a server that runs on this host with ``python``."""
    return probe_identity(run_here, python, model, cache=str(cache_dir()))


def container_identity(container: Any, python: str, model: PreparedModel, image: dict[str, Any]) -> dict[str, Any]:
    """The code as the container's interpreter reports it; the weights hashed here (the container
    reads the same files through its bind mount, and this host's cache persists); the image's
    digests and labels."""

    def run_inside(argv: list[str]) -> tuple[int, str]:
        try:
            code, out = container.exec_run(argv, demux=False)
        except Exception as err:  # the engine's errors: recorded, never fatal to the run
            return 125, f"docker exec failed: {err}"
        return int(code), out.decode("utf-8", "replace") if isinstance(out, bytes) else str(out)

    found = probe_identity(run_inside, python, None, cache=None, weights=False)
    if Path(model.path).is_dir():
        here = local_identity_files(model)
        found.update({key: here[key] for key in ("weights", "tokenizer") if key in here})
    found["image"] = {
        "id": image.get("image_id"),
        "digests": list(image.get("repo_digests") or []),
        "labels": dict(image.get("image_labels") or {}),
    }
    return found


def local_identity_files(model: PreparedModel) -> dict[str, Any]:
    """The weights' and tokenizer's identity only, hashed by this interpreter (no vLLM needed)."""
    return identity_probe.files_identity(model.path, model.tokenizer, Path(cache_dir()))
