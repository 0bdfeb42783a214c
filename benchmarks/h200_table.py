"""Side by side: byog's batch sweep and `vllm bench serve` against one CUDA vLLM server on an H200.

Reads only the committed raw results (``benchmarks/results/h200/<tag>/``, README there); byog's
numbers are re-derived from its raw rows by ``byog.bench.summary`` (the one home of the formulas),
vLLM's are read from its own result files. Also checks, per point, that each tool's token totals
equal the server's counter deltas (``vllm:generation_tokens_total``, ``vllm:prompt_tokens_total``).

    python benchmarks/h200_table.py                   # every tag (tp1, tp2) as a table
    python benchmarks/h200_table.py --json            # the rows as JSON
    python benchmarks/h200_table.py import RUN.tar.xz [--tag tp1]   # device tarball -> committed layout

The import step drops what is too big to commit and not needed to re-derive the table: byog's
/metrics snapshots (their deltas stay in each point record), vLLM's generated texts, and vLLM's
per-token ITL lists (replaced per request by their sum, ``itl_sum_s``, so TPOT can be recomputed).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "h200"
GEN = "vllm:generation_tokens_total"
PROMPT = "vllm:prompt_tokens_total"
TPOT_TARGET = 0.02  # |byog / vLLM - 1| of median TPOT the issue asks for


# --- vLLM's side ---------------------------------------------------------------------------


def vllm_request_tpots_s(result: dict[str, Any]) -> list[float]:
    """Per-request TPOT as `vllm bench serve` defines it: (latency - TTFT) / (output_len - 1) = sum(ITL) / (n - 1)."""
    sums = result.get("itl_sum_s") or [sum(x) for x in result.get("itls", [])]
    return [s / (n - 1) for s, n in zip(sums, result["output_lens"], strict=True) if n > 1]


def vllm_point(result: dict[str, Any], counters: dict[str, Any]) -> dict[str, Any]:
    """vLLM's headline numbers for one point and its token check against the server's counters.

    Sent = the measured prompts plus ``--num-warmups`` copies of the first prompt (vLLM's warm-up
    resends input_requests[0]), each asked for exactly OSL tokens (``--ignore-eos``).
    """
    warmups = counters["warmups"]
    osl = counters["osl"]
    deltas = counters.get("counter_deltas") or {}
    sent_out = result["total_output_tokens"] + warmups * osl
    sent_in = result["total_input_tokens"] + warmups * result["input_lens"][0]
    return {
        "tpot_ms": result["median_tpot_ms"],
        "ttft_ms": result["median_ttft_ms"],
        "itl_ms": result["median_itl_ms"],
        "output_tok_s": result["output_throughput"],
        "completed": result["completed"],
        "failed": result.get("failed", 0),
        "tokens_out_client": sent_out,
        "tokens_out_server": deltas.get(GEN),
        "tokens_in_client": sent_in,
        "tokens_in_server": deltas.get(PROMPT),
        "all_osl": all(n == osl for n in result["output_lens"]),
        "wall_s": counters.get("wall_s"),
    }


# --- byog's side ---------------------------------------------------------------------------


def byog_points(run: Path) -> dict[tuple[int, int], dict[str, Any]]:
    """byog's points of one run directory, keyed (ISL, B), re-derived from the raw rows."""
    from byog.analysis.bench_summary import summarize_bench
    from byog.core.io import read_json
    from byog.core.paths import RunDir
    from byog.plans.load import load_plan
    from byog.schemas.bench import read_request_rows

    folder = RunDir(run)
    plan, _ = load_plan(str(folder.plan_yaml))
    out: dict[tuple[int, int], dict[str, Any]] = {}
    for entry in summarize_bench(folder, plan).model_dump(mode="json")["points"]:
        server, pid = entry["server"], entry["point_id"]
        record = read_json(folder.bench_point(server, pid)) if folder.bench_point(server, pid).is_file() else {}
        rows = read_request_rows(folder.bench_rows(server, pid)) if folder.bench_point_complete(server, pid) else []
        deltas = record.get("counter_deltas") or {}
        mtr = entry.get("metrics") or {}
        client = record.get("client") or {}
        out[(entry["isl"], entry["batch_size"])] = {
            "tpot_ms": _ms((mtr.get("tpot_s") or {}).get("p50")),
            "tok_s_user": (mtr.get("tok_s_user") or {}).get("p50"),
            "decode_tok_s": mtr.get("decode_tok_s"),
            "ttft_ms": _ms((mtr.get("ttft_s") or {}).get("p50")),
            "itl_ms": _ms((mtr.get("itl_s") or {}).get("p50")),
            "output_tok_s": mtr.get("output_tok_s"),
            "valid": entry["valid"],
            "invalid_reasons": entry["invalid_reasons"],
            "n_requests": entry["n_requests"],
            # every request the client sent (warm-up too) against the server's counters over the point
            "tokens_out_client": sum(r.n_out for r in rows),
            "tokens_out_server": deltas.get(GEN),
            "tokens_in_client": sum(r.n_in or 0 for r in rows),
            "tokens_in_server": deltas.get(PROMPT),
            "all_osl": all(r.n_out == entry["osl"] for r in rows) and bool(rows),
            "client_cpu_share": client.get("cpu_share"),
            "loop_lag_p99_ms": _ms(client.get("loop_lag_p99_s")),
            "duration_s": record.get("duration_s"),
        }
    return out


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e3


# --- the table -----------------------------------------------------------------------------


def tensor_parallel_size(tag_dir: Path) -> int | None:
    """TP as byog recorded it in the server record of its run directory (read from the server)."""
    for record in sorted(tag_dir.glob("byog-isl*/servers/*/server.json")):
        tp = json.loads(record.read_text()).get("tensor_parallel_size")
        if tp is not None:
            return int(tp)
    return None


def rows_for(tag_dir: Path) -> list[dict[str, Any]]:
    byog: dict[tuple[int, int], dict[str, Any]] = {}
    for run in sorted(tag_dir.glob("byog-isl*")):
        if run.is_dir():
            byog.update(byog_points(run))
    vllm: dict[tuple[int, int], dict[str, Any]] = {}
    for counters_path in sorted((tag_dir / "vllm").glob("vllm-*.counters.json")):
        counters = json.loads(counters_path.read_text())
        result_path = counters_path.with_name(counters_path.name.replace(".counters.json", ".json"))
        if result_path.is_file():
            vllm[(counters["isl"], counters["batch_size"])] = vllm_point(json.loads(result_path.read_text()), counters)
    rows = []
    for isl, batch in sorted(set(byog) | set(vllm)):
        b, v = byog.get((isl, batch)), vllm.get((isl, batch))
        ratio = b["tpot_ms"] / v["tpot_ms"] if b and v and b["tpot_ms"] and v["tpot_ms"] else None
        itl_ratio = b["itl_ms"] / v["itl_ms"] if b and v and b["itl_ms"] and v["itl_ms"] else None
        rows.append(
            {
                "tag": tag_dir.name,
                "isl": isl,
                "batch_size": batch,
                "byog": b,
                "vllm": v,
                "tpot_ratio": ratio,
                "itl_ratio": itl_ratio,
            }
        )
    return rows


def _f(x: float | None, fmt: str) -> str:
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, fmt)


def _tokens_ok(side: dict[str, Any] | None) -> str:
    if not side:
        return "-"
    ok = side["tokens_out_client"] == side["tokens_out_server"] and side["tokens_in_client"] == side["tokens_in_server"]
    return "equal" if ok else f"{side['tokens_out_client']}/{_f(side['tokens_out_server'], '.0f')}"


def render(rows: list[dict[str, Any]], tp: int | None) -> str:
    head = (
        "ISL",
        "B",
        "byog TPOT ms",
        "tok/s/user",
        "decode tok/s",
        "byog TTFT ms",
        "vLLM TPOT ms",
        "vLLM TTFT ms",
        "vLLM out tok/s",
        "TPOT ratio",
        "ITL p50 ratio",
        "byog tok=ctr",
        "vLLM tok=ctr",
        "client CPU",
        "valid",
    )
    lines = [head]
    for r in rows:
        b, v = r["byog"] or {}, r["vllm"] or {}
        lines.append(
            (
                str(r["isl"]),
                str(r["batch_size"]),
                _f(b.get("tpot_ms"), ".3f"),
                _f(b.get("tok_s_user"), ".1f"),
                _f(b.get("decode_tok_s"), ",.0f"),
                _f(b.get("ttft_ms"), ".1f"),
                _f(v.get("tpot_ms"), ".3f"),
                _f(v.get("ttft_ms"), ".1f"),
                _f(v.get("output_tok_s"), ",.0f"),
                _f(r["tpot_ratio"], ".4f"),
                _f(r["itl_ratio"], ".4f"),
                _tokens_ok(r["byog"]),
                _tokens_ok(r["vllm"]),
                _f(b.get("client_cpu_share"), ".0%"),
                "-" if not r["byog"] else ("yes" if b["valid"] else "NO"),
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    text = [f"{rows[0]['tag'] if rows else '?'}: tensor parallel size {tp} (byog's server record)"]
    for n, line in enumerate(lines):
        text.append("  ".join(cell.rjust(w) for cell, w in zip(line, widths, strict=True)))
        if n == 0:
            text.append("  ".join("-" * w for w in widths))
    ratios = [r["tpot_ratio"] for r in rows if r["tpot_ratio"] is not None]
    if ratios:
        worst = max(ratios, key=lambda x: abs(x - 1))
        text.append(
            f"TPOT ratio byog/vLLM: median {statistics.median(ratios):.4f}, worst {worst:.4f}; "
            f"{sum(abs(x - 1) <= TPOT_TARGET for x in ratios)} of {len(ratios)} points within {TPOT_TARGET:.0%}"
        )
    itl = [r["itl_ratio"] for r in rows if r["itl_ratio"] is not None]
    if itl:
        worst = max(itl, key=lambda x: abs(x - 1))
        text.append(
            f"median ITL ratio byog/vLLM (the decode step both saw): median {statistics.median(itl):.4f}, "
            f"worst {worst:.4f}; {sum(abs(x - 1) <= TPOT_TARGET for x in itl)} of {len(itl)} within {TPOT_TARGET:.0%}"
        )
    for r in rows:
        for reason in (r["byog"] or {}).get("invalid_reasons", []):
            text.append(f"  ISL {r['isl']} B {r['batch_size']} byog invalid: {reason}")
    return "\n".join(text)


def tags(results: Path) -> list[Path]:
    return sorted(p for p in results.iterdir() if p.is_dir() and (p / "vllm").is_dir() or list(p.glob("byog-isl*")))


# --- import: device tarball -> committed layout ---------------------------------------------


def _trim_vllm(path: Path) -> None:
    data = json.loads(path.read_text())
    data.pop("generated_texts", None)
    if "itls" in data:
        data["itl_sum_s"] = [math.fsum(x) for x in data.pop("itls")]
        data["trimmed_by"] = "benchmarks/h200_table.py import: itls -> itl_sum_s, generated_texts dropped"
    path.write_text(json.dumps(data, indent=1))


def import_tarball(tarball: Path, results: Path, tag: str | None) -> Path:
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(tarball) as tar:
        tar.extractall(tmp, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        (src,) = [p for p in Path(tmp).iterdir() if p.is_dir()]
        dest = results / (tag or src.name)
        if dest.exists():
            raise SystemExit(f"{dest} exists: remove it first")
        for prom in src.glob("byog-isl*/servers/*/metrics-*.prom"):
            prom.unlink()
        for path in src.glob("vllm/vllm-*.json"):
            if not path.name.endswith(".counters.json"):
                _trim_vllm(path)
        dest.parent.mkdir(parents=True, exist_ok=True)
        import shutil

        shutil.copytree(src, dest)
    return dest


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("action", nargs="?", default="show", choices=("show", "import"))
    cli.add_argument("tarball", nargs="?", type=Path)
    cli.add_argument("--tag")
    cli.add_argument("--results", type=Path, default=RESULTS)
    cli.add_argument("--json", action="store_true")
    args = cli.parse_args(argv)
    if args.action == "import":
        if not args.tarball:
            cli.error("import needs the tarball")
        print(import_tarball(args.tarball, args.results, args.tag))
        return 0
    found = [t for t in tags(args.results) if args.tag in (None, t.name)]
    if not found:
        print(f"no results under {args.results}", file=sys.stderr)
        return 1
    out = {t.name: {"tensor_parallel_size": tensor_parallel_size(t), "rows": rows_for(t)} for t in found}
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print("\n\n".join(render(v["rows"], v["tensor_parallel_size"]) for v in out.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
