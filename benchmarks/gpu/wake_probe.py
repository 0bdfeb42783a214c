"""Wake integrity probe: does a vLLM server woken from sleep generate what it did before its first sleep?

Talks HTTP only to one or two running vLLM servers started with ``--enable-sleep-mode`` and
``VLLM_SERVER_DEV_MODE=1``. Each server's reference fingerprint (byog.bench.fingerprint: 32 fixed
prompts, B = 1 one at a time, temperature 0, max_tokens 32, logprobs 5, after POST
/reset_prefix_cache) is taken while it is awake, before its first sleep (a server asleep at the start
gets it at its first wake, marked so), twice: the two's difference (``aa``) is the server's own envelope,
the yardstick for a batched fingerprint. Then N swaps: with two servers, swap i sleeps the other and
wakes server i mod 2; with one, it sleeps and wakes that server. After each wake the fingerprint is
taken again and compared (byog.analysis.wake): tokens identical (prompts), max |Δlogprob|, sleep s,
wake s, GPU memory used (nvidia-smi) before the sleep, while asleep and after the wake.

    python benchmarks/gpu/wake_probe.py --url http://127.0.0.1:8001 --url http://127.0.0.1:8002 \\
        --swaps 12 --level 1 --out wake.json

Level 2 wakes by vLLM's documented route (weights, reload_weights, KV cache); --bare-level2-wake
wakes with a plain /wake_up instead, to show what that serves.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from byog.analysis.wake import compare
from byog.bench.fingerprint import MAX_TOKENS, PROMPTS, fingerprint_prompts, take_fingerprint
from byog.runtimes.sleep_mode import SleepControl


def gpu_used_mib() -> list[int] | None:
    """Memory used per GPU (nvidia-smi), None without it."""
    if shutil.which("nvidia-smi") is None:
        return None
    done = subprocess.run(
        ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        return [int(x) for x in done.stdout.split()] if done.returncode == 0 else None
    except ValueError:
        return None


def served_model(url: str) -> str:
    return str(httpx.get(f"{url}/v1/models", timeout=30.0).json()["data"][0]["id"])


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", action="append", required=True, help="a server's base URL (once or twice)")
    ap.add_argument("--swaps", type=int, default=12)
    ap.add_argument("--level", type=int, default=1, choices=(1, 2))
    ap.add_argument("--bare-level2-wake", action="store_true", help="level 2: plain /wake_up, no reload_weights")
    ap.add_argument("--prompts", type=int, default=PROMPTS)
    ap.add_argument("--max-tokens", type=int, default=MAX_TOKENS)
    ap.add_argument("--batch", type=int, default=1, help="prompts sent at once (1: one at a time)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    if len(args.url) > 2:
        ap.error("one or two --url")
    return args


def main() -> int:
    args = _args()
    prompts = fingerprint_prompts(args.prompts)
    controls = [SleepControl(f"s{i}", url.rstrip("/")) for i, url in enumerate(args.url)]
    models = [served_model(c.base_url) for c in controls]
    wake_level = 1 if args.bare_level2_wake else args.level

    def fingerprint(i: int) -> dict[str, Any]:
        return take_fingerprint(controls[i].base_url, models[i], prompts, args.batch, args.max_tokens)

    refs: dict[int, dict[str, Any]] = {}
    servers: list[dict[str, Any]] = []
    for i, c in enumerate(controls):
        awake = not c.is_sleeping()
        entry: dict[str, Any] = {"url": c.base_url, "model": models[i], "reference_before_first_sleep": awake}
        if awake:  # two before any sleep: their difference is the server's own A/A envelope
            refs[i] = fingerprint(i)
            aa = compare(refs[i], fingerprint(i))
            entry["aa"] = {
                "tokens_identical": aa.identical,
                "prompts": aa.prompts,
                "max_abs_dlogprob": aa.max_abs_dlogprob,
            }
        servers.append({**entry, "wakes": []})

    for swap in range(args.swaps):
        i = swap % len(controls)
        c = controls[i]
        gpu_before = gpu_used_mib()
        sleep_s = 0.0
        for other in controls:  # put every awake server to sleep (with one server: itself)
            if not other.is_sleeping():
                sleep_s += other.sleep(args.level)
        gpu_asleep = gpu_used_mib()
        wake_s = c.wake_up(wake_level)
        gpu_after = gpu_used_mib()
        got = fingerprint(i)
        entry: dict[str, Any] = {
            "swap": swap,
            "sleep_s": round(sleep_s, 4),
            "wake_s": round(wake_s, 4),
            "gpu_used_mib": {"before": gpu_before, "asleep": gpu_asleep, "after_wake": gpu_after},
            "fingerprint_s": got["seconds"],
            "cache_reset": got["cache_reset"],
        }
        if i not in refs:
            refs[i] = got
            entry["reference"] = True
        else:
            cmp = compare(refs[i], got)
            entry.update(tokens_identical=cmp.identical, prompts=cmp.prompts, max_abs_dlogprob=cmp.max_abs_dlogprob)
            if cmp.identical < cmp.prompts:
                entry["first_tokens_after"] = [t[:8] for t in got["tokens"][:4]]
        servers[i]["wakes"].append(entry)
        print(json.dumps({"server": i, **{k: v for k, v in entry.items() if k != "first_tokens_after"}}), flush=True)

    out = {
        "level": args.level,
        "bare_level2_wake": args.bare_level2_wake,
        "batch": args.batch,
        "prompts": len(prompts),
        "max_tokens": args.max_tokens,
        "servers": servers,
        "references": {str(i): r for i, r in refs.items()},
    }
    args.out.write_text(json.dumps(out, indent=1))
    bad = [w for s in servers for w in s["wakes"] if w.get("tokens_identical", w.get("prompts")) != w.get("prompts")]
    print(f"wrote {args.out}: {sum(len(s['wakes']) for s in servers)} wakes, {len(bad)} with changed outputs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
