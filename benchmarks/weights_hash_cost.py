"""The cost of the weights' identity: SmolLM2's files hashed once (cold cache), then read from the cache.

    python benchmarks/weights_hash_cost.py [MODEL_DIR]

Prints the bytes hashed, the wall time of a cold hash (an empty cache directory) and of a cached
one (same path, size and mtime), and the throughput of the cold pass.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from byog.images.models import prepare_model
from byog.runtimes.identity_probe import model_identity
from byog.schemas.plan import BUILTIN_MODEL, ModelSpec


def main() -> None:
    model = sys.argv[1] if len(sys.argv) > 1 else prepare_model(ModelSpec(path=BUILTIN_MODEL)).path
    size = sum(p.stat().st_size for p in Path(model).rglob("*") if p.is_file())
    with tempfile.TemporaryDirectory() as cache:
        started = time.perf_counter()
        cold = model_identity(model, Path(cache))
        cold_s = time.perf_counter() - started
        started = time.perf_counter()
        warm = model_identity(model, Path(cache))
        warm_s = time.perf_counter() - started
    assert warm["weights_sha256"] == cold["weights_sha256"]
    print(f"model: {model} ({size / 2**20:.1f} MiB, {len(cold['files'])} files hashed)")
    print(f"cold (hashed {cold['files_hashed']} files): {cold_s * 1000:.1f} ms, {size / 2**20 / cold_s:.0f} MiB/s")
    print(f"cached ({warm['files_cached']} files from the cache): {warm_s * 1000:.2f} ms")
    print(f"weights_sha256: {cold['weights_sha256']}")


if __name__ == "__main__":
    main()
