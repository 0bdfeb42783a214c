"""`byog bench` (a sweep against a running server) and `byog client-ceiling`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from byog.cli.common import (
    DataDirOpt,
    EndpointOpt,
    JsonOpt,
    ModelOpt,
    RunDirOpt,
    TokenizerOpt,
    console,
    print_json,
    reporter,
    server_option,
)
from byog.cli.console_reporter import print_table
from byog.core.errors import UsageError
from byog.core.reporter import Table

if TYPE_CHECKING:
    from byog.schemas.bench import PointSummary


def parse_int_list(text: str, what: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"{what} must be whole numbers separated by commas, got '{text}'") from None
    if not values or any(v <= 0 for v in values):
        raise UsageError(f"{what} must be positive, got '{text}'")
    return values


def parse_float_list(text: str, what: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"{what} must be numbers separated by commas, got '{text}'") from None
    if not values or not all(v > 0 for v in values):  # `> 0` is False for nan too
        raise UsageError(f"{what} must be positive, got '{text}'")
    return values


# bench's own options (the shared ones are byog.cli.common's)
WorkloadOpt = Annotated[str, typer.Option("--workload", help="batch, concurrency or rate.")]
BatchSizesOpt = Annotated[str, typer.Option("--batch-sizes", help="Batch workload: B values, e.g. 1,2,4.")]
ConcurrenciesOpt = Annotated[str, typer.Option("--concurrency", help="Concurrency workload: C values, e.g. 1,8.")]
RatesOpt = Annotated[str, typer.Option("--rates", help="Rate workload: requests/s values, e.g. 0.5,2.")]
NumPromptsOpt = Annotated[
    int, typer.Option("--num-prompts", min=1, help="Concurrency/rate workloads: measured requests per point.")
]
WarmupPromptsOpt = Annotated[
    int,
    typer.Option(
        "--warmup-prompts",
        min=0,
        help="Concurrency workload: requests through the same loop first, not measured (use >= C when comparing with "
        "`vllm bench serve`; docs/metrics.md).",
    ),
]
IslOpt = Annotated[str, typer.Option("--isl", help="Input lengths in tokens, e.g. 1,1024.")]
OslOpt = Annotated[str, typer.Option("--osl", help="Output lengths in tokens.")]
WavesOpt = Annotated[int, typer.Option("--waves", min=1, help="Batch workload: measured waves.")]
WarmupWavesOpt = Annotated[
    int, typer.Option("--warmup-waves", min=0, help="Batch workload: warm-up waves (not measured).")
]
ApiOpt = Annotated[str, typer.Option("--api", help="completions or chat.")]
PromptsOpt = Annotated[
    str,
    typer.Option(
        "--prompts",
        help="random (token ids), random-text (the same as text the server tokenizes, as `vllm bench serve` sends), "
        "mt_bench or gsm8k.",
    ),
]
SeedOpt = Annotated[int, typer.Option("--seed", help="Prompt (and Poisson arrival) seed.")]
ResetPrefixCacheOpt = Annotated[
    bool, typer.Option("--reset-prefix-cache", help="POST /reset_prefix_cache before each point (vLLM dev mode).")
]
RequestBodyOpt = Annotated[
    str,
    typer.Option(
        "--request-body",
        help="byog (exact per-chunk token counts) or vllm (the body `vllm bench serve` sends; docs/metrics.md).",
    ),
]
RemeasureOpt = Annotated[
    int | None,
    typer.Option(
        "--remeasure",
        min=0,
        help="Times a point invalid for a transient cause (client saturated, GPU clocks slowed) is measured again "
        "once the cause clears (default: a plan's; 0: never). Not with --plan: set `remeasure` in the plan.",
    ),
]
BenchPlanOpt = Annotated[
    str | None, typer.Option("--plan", help="Take the workloads of this plan's server instead of the flags.")
]
BenchServerOpt = Annotated[
    str | None, server_option("With --plan: which server config the endpoint runs (default: the baseline).")
]
CHOICES = {
    "--api": ("completions", "chat"),
    "--request-body": ("byog", "vllm"),
    "--prompts": ("random", "random-text", "mt_bench", "gsm8k"),
}


def _check_choice(flag: str, value: str) -> None:
    """A flag with a closed set of values: anything else is a one-sentence usage error."""
    allowed = CHOICES[flag]
    if value not in allowed:
        listed = ", ".join(allowed[:-1]) + " or " + allowed[-1]
        raise UsageError(f"{flag} must be {listed}, not '{value}'")


def bench_cmd(
    endpoint: EndpointOpt,
    model: ModelOpt = None,
    tokenizer: TokenizerOpt = None,
    workload: WorkloadOpt = "batch",
    batch_sizes: BatchSizesOpt = "1",
    concurrency: ConcurrenciesOpt = "1",
    rates: RatesOpt = "1",
    num_prompts: NumPromptsOpt = 32,
    warmup_prompts: WarmupPromptsOpt = 0,
    isl: IslOpt = "32",
    osl: OslOpt = "64",
    waves: WavesOpt = 3,
    warmup_waves: WarmupWavesOpt = 1,
    api: ApiOpt = "completions",
    prompts: PromptsOpt = "random",
    seed: SeedOpt = 1234,
    reset_prefix_cache: ResetPrefixCacheOpt = False,
    request_body: RequestBodyOpt = "byog",
    remeasure: RemeasureOpt = None,
    plan: BenchPlanOpt = None,
    server: BenchServerOpt = None,
    data_dir: DataDirOpt = None,
    run_dir: RunDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run the decode sweep against a running server and write raw rows + point records to a run directory."""
    from byog.pipeline.bench_endpoint import BenchFlags, bench_endpoint

    for flag, value in (("--api", api), ("--request-body", request_body), ("--prompts", prompts)):
        _check_choice(flag, value)
    flags = BenchFlags(
        endpoint=endpoint,
        model=model,
        tokenizer=tokenizer,
        workload=workload,
        batch_sizes=parse_int_list(batch_sizes, "--batch-sizes"),
        concurrencies=parse_int_list(concurrency, "--concurrency"),
        rates=parse_float_list(rates, "--rates"),
        num_prompts=num_prompts,
        warmup_prompts=warmup_prompts,
        isl=parse_int_list(isl, "--isl"),
        osl=parse_int_list(osl, "--osl"),
        waves=waves,
        warmup_waves=warmup_waves,
        api=api,
        prompts=prompts,
        seed=seed,
        reset_prefix_cache=reset_prefix_cache,
        request_body=request_body,
        remeasure=remeasure,
        plan=plan,
        server=server,
        data_dir=data_dir,
    )
    result = bench_endpoint(
        flags, run_dir, reporter(to_stderr=True)
    )  # progress on stderr: stdout is the result (a pipe gets the table alone)
    if as_json:
        print_json(result.to_json())
    else:
        render_points(result.points, title=f"byog bench -> {result.run_dir}")


def client_ceiling_cmd(
    concurrency: int = typer.Option(32, "--concurrency", min=1, help="Streams in flight."),
    num_prompts: int = typer.Option(128, "--num-prompts", min=1, help="Requests in all."),
    osl: int = typer.Option(1024, "--osl", min=2, help="Tokens per response (one per chunk)."),
    as_json: JsonOpt = False,
) -> None:
    """How many streamed tokens/s byog's client sustains here, against a loopback server that does no model work."""
    from byog.bench.ceiling import measure_client_ceiling, server_process

    with server_process() as base_url:
        measure_client_ceiling(concurrency, min(num_prompts, 2 * concurrency), 64, base_url)  # warm up
        result = measure_client_ceiling(concurrency, num_prompts, osl, base_url)
    if as_json:
        print_json(result)
        return
    console.print(
        f"byog's client: {result['tok_s']:,.0f} tok/s over {result['tokens']:,} tokens in {result['wall_s']:.2f} s "
        f"(C={concurrency}, OSL {osl}); {result['cpu_us_per_chunk']:.1f} us of client CPU per chunk, "
        f"{result['cpu_share']:.0%} of a core; {result['errors']} errors. A server near this rate measures the client.",
        highlight=False,
    )


# --- rendering ------------------------------------------------------------------------------


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e3:.2f}"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:,.1f}"


def render_points(points: list[PointSummary], title: str = "bench") -> None:

    from byog.report.format import struck

    columns = [
        "server",
        "point",
        "load",
        "prompts",
        "valid",
        "TTFT p50 ms",
        "TPOT p50 ms",
        "TPOT p90 ms",
        "tok/s/user p50",
        "tok/s/user p90",
        "decode tok/s",
        "output tok/s",
    ]
    table = Table(title, columns, right={c for c in columns if "ms" in c or "tok" in c})
    for p in points:
        m = p.metrics
        numbers = [
            _ms(m.ttft_s.p50 if m else None),
            _ms(m.tpot_s.p50 if m else None),
            _ms(m.tpot_s.p90 if m else None),
            _num(m.tok_s_user.p50 if m else None),
            _num(m.tok_s_user.p90 if m else None),
            _num(m.decode_tok_s if m else None),
            _num(m.output_tok_s if m else None),
        ]
        if not p.valid:  # as report.md shows them: struck through, not results
            numbers = [cell if cell == "-" else struck(cell) for cell in numbers]
        table = table.with_row(
            p.server, p.point_id, p.load_label, p.prompts or "-", "yes" if p.valid else "no", *numbers
        )
    print_table(console, table)
    for p in points:
        for reason in p.invalid_reasons:
            console.print(
                Text.assemble((f"{p.server} {p.point_id} invalid: ", "yellow"), reason), highlight=False, soft_wrap=True
            )
