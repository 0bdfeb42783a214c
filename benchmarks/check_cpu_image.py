"""Launch the self-contained `cpu` image through the docker runtime: one completion, then stop.

    python scripts/check-cpu-image.py [IMAGE]      # default byog-eval:<version>-cpu

Prints the launch-to-healthy time (on a vfs engine it includes copying the image for the
container) and what server.json recorded. Run it under the shared vLLM lock.
"""

import json
import sys
import tempfile
import time
from pathlib import Path

import httpx

from byog.images.models import prepare_model
from byog.images.tags import default_tag
from byog.runtimes.docker import DockerRuntime
from byog.schemas.plan import BUILTIN_MODEL, ModelSpec, server_config

IMAGE = sys.argv[1] if len(sys.argv) > 1 else default_tag("cpu")
RUN_DIR = Path(tempfile.mkdtemp(prefix="byog-cpu-check-")) / "runs" / "cpu-check"

model = prepare_model(ModelSpec(path=BUILTIN_MODEL, max_model_len=4096))
config = server_config(runtime="docker", image=IMAGE, args=["--enforce-eager"])
t0 = time.monotonic()
server = DockerRuntime().launch("full", config, model, RUN_DIR / "servers" / "full")
try:
    print(f"launch to healthy: {time.monotonic() - t0:.1f} s")
    reply = httpx.post(
        f"{server.endpoint.base_url}/v1/completions",
        timeout=120,
        json={"model": server.endpoint.model, "prompt": "1 2 3", "max_tokens": 8, "ignore_eos": True},
    ).json()
    print("completion_tokens:", reply["usage"]["completion_tokens"])
    record = json.loads((RUN_DIR / "servers" / "full" / "server.json").read_text())
    print(
        "argv:", record["argv"][:5], "version:", record["version"], "volumes:", sorted(record["container"]["volumes"])
    )
finally:
    server.stop()
