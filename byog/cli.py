"""The byog command line: parse, call one function, render. No logic lives here.

Every command is wrapped by ``_guarded``: a ``ByogError`` becomes one sentence on stderr and its
exit code (0 ok, 1 check failed, 2 usage, 3 environment); ``BYOG_DEBUG=1`` shows the traceback.
Heavy dependencies are imported inside the commands so ``byog --help`` stays fast.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any, Callable, Optional, TypeVar

import typer
from rich.console import Console

from byog import __version__
from byog.errors import ByogError, UsageError

app = typer.Typer(
    name="byog",
    help="Bring your own GPU: measure a vLLM change against stock vLLM and pack a signed bundle.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
err_console = Console(stderr=True)

F = TypeVar("F", bound=Callable[..., Any])


def _guarded(fn: F) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ByogError as err:
            if os.environ.get("BYOG_DEBUG"):
                raise
            err_console.print(f"[bold red]byog:[/] {err}", highlight=False, soft_wrap=True)
            raise typer.Exit(err.exit_code) from None
        except KeyboardInterrupt:
            if os.environ.get("BYOG_DEBUG"):
                raise
            err_console.print("[bold red]byog:[/] interrupted; finished results are kept and a rerun resumes.")
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


def command(*args: Any, **kwargs: Any) -> Callable[[F], F]:
    def register(fn: F) -> F:
        app.command(*args, **kwargs)(_guarded(fn))
        return fn

    return register


def print_json(obj: Any) -> None:
    typer.echo(json.dumps(obj, indent=2, sort_keys=True, default=str))


# --- the spine ------------------------------------------------------------------------------

@command("version")
def version_cmd() -> None:
    """Print byog's version."""
    typer.echo(__version__)


@command("run")
def run_cmd(
    plan: Optional[str] = typer.Argument(None, help="Plan file or built-in profile name (default: smoke)."),
    plan_opt: Optional[str] = typer.Option(None, "--plan", help="Same as the PLAN argument."),
    run_dir: Optional[Path] = typer.Option(None, "--run-dir", help="Run directory; an existing one resumes (default: runs/<new id>)."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Local eval datasets (default: BYOG_DATA_DIR, then ../shared/datasets)."),
    tier: str = typer.Option("full", "--tier", help="smoke | standard | full: cut a profile down (full = as written)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Launch every server of the plan, run its sweeps and evals, derive the verdict, write the run directory."""
    from byog.pipeline import run_plan

    result = run_plan(
        plan_opt or plan, run_dir=run_dir, console=err_console if as_json else console, data_dir=data_dir, tier=tier
    )
    if as_json:
        print_json(result)


@command("serve")
def serve_cmd(
    plan: Optional[str] = typer.Argument(None, help="Plan file or built-in profile name (default: smoke)."),
    server: Optional[str] = typer.Option(None, "--server", help="Which server config to start (default: the baseline)."),
    run_dir: Path = typer.Option(Path("runs/serve"), "--run-dir", help="Where server.json and the log go."),
) -> None:
    """Start one server config of a plan and keep it up until Ctrl-C (for byog bench/eval --endpoint)."""
    from byog.pipeline import serve_until_interrupted

    serve_until_interrupted(plan, server, run_dir, console)


@command("compare")
def compare_cmd(
    run_dir: Path = typer.Argument(..., help="A run directory."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Re-derive summary.json and report.md from a run directory's raw records."""
    from byog.pipeline import derive_and_write

    summary = derive_and_write(run_dir, console=err_console if as_json else console)
    if as_json:
        print_json(summary)


# --- bundles: pack, verify, report, keys, attach (byog/bundles) ------------------------------

bundle_app = typer.Typer(help="Seal a run directory into a signed bundle.", no_args_is_help=True)
keys_app = typer.Typer(help="Manage the allowed signers verify trusts.", no_args_is_help=True)
app.add_typer(bundle_app, name="bundle")
app.add_typer(keys_app, name="keys")


@bundle_app.command("pack")
@_guarded
def bundle_pack_cmd(
    run_dir: Path = typer.Argument(..., help="A run directory with summary.json."),
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="Bundle path (default: RUN_DIR/bundle.tar.gz)."),
    no_sign: bool = typer.Option(False, "--no-sign", help="Pack without signing even when a key is configured."),
) -> None:
    """Write the manifest, sign it with your SSH key, and pack a deterministic bundle.tar.gz (at most 25 MB)."""
    from byog.bundles.finalize import describe, seal_and_pack
    from byog.bundles.rundir import RunDir

    console.print(describe(seal_and_pack(RunDir(run_dir), out, sign=not no_sign)), highlight=False, soft_wrap=True)


@command("verify")
def verify_cmd(
    bundle: Path = typer.Argument(..., help="bundle.tar.gz to check."),
    allowed_signers: Optional[Path] = typer.Option(None, "--allowed-signers", help="OpenSSH allowed_signers file (default: ~/.config/byog/allowed_signers)."),
    policy: Optional[Path] = typer.Option(None, "--policy", help="Policy YAML: allowed image digests, required points/tasks, minimum samples."),
    claims: Optional[Path] = typer.Option(None, "--claims", help="Claims YAML: the numbers a PR states."),
    allow_unsigned: bool = typer.Option(False, "--allow-unsigned", help="Check an unsigned bundle instead of failing it."),
    as_json: bool = typer.Option(False, "--json", help="Print every check as JSON."),
) -> None:
    """Check a bundle: safe extraction, hashes, signer, schemas, every number recomputed, policy, claims."""
    from byog.bundles.verify import verify_bundle

    report = verify_bundle(bundle, allowed_signers=allowed_signers, policy=policy, claims=claims, allow_unsigned=allow_unsigned)
    if as_json:
        print_json(report.as_json())
    else:
        marks = {"pass": "[green]ok  [/]", "skip": "[dim]skip[/]", "fail": "[bold red]FAIL[/]"}
        for result in report.results:
            console.print(f"{marks[result.status]} {result.name}: {result.message}", highlight=False, soft_wrap=True)
        verdict = "[bold green]verified[/]" if report.verified else f"[bold red]not verified[/] ({len(report.failures)} check(s) failed)"
        console.print(f"{bundle}: {verdict}", highlight=False, soft_wrap=True)
    if not report.verified:
        raise typer.Exit(1)


@command("report")
def report_cmd(
    target: Path = typer.Argument(..., help="A run directory or a bundle.tar.gz."),
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="Folder for report.md and plots/ (default: the run directory, or <bundle>-report/)."),
) -> None:
    """Write report.md and the plots (tok/s vs batch, speedup with CI, TPOT distribution, eval deltas)."""
    from byog.bundles.publish import write_report

    written = write_report(target, out)
    console.print(f"wrote {written.report_md} and {len(written.plots)} plots under {written.report_md.parent / 'plots'}", highlight=False)


@keys_app.command("add")
@_guarded
def keys_add_cmd(
    github_user: str = typer.Argument(..., help="GitHub user whose SSH signing keys to trust."),
    allowed_signers: Optional[Path] = typer.Option(None, "--allowed-signers", help="File to add to (default: ~/.config/byog/allowed_signers)."),
) -> None:
    """Fetch a GitHub user's public SSH signing keys into an allowed_signers file."""
    from byog.bundles.keys import add_github_user
    from byog.bundles.sign import default_allowed_signers

    added = add_github_user(github_user, allowed_signers or default_allowed_signers())
    console.print(f"{added.path}: {added.added} key(s) added for {added.principal}, {added.already_present} already there", highlight=False)


@command("attach")
def attach_cmd(
    bundle: Path = typer.Argument(..., help="bundle.tar.gz"),
    pr: int = typer.Option(..., "--pr", help="Pull request number."),
    repo: Optional[str] = typer.Option(None, "--repo", help="OWNER/NAME (default: gh's current repository)."),
) -> None:
    """Post the bundle's report.md to a PR with gh, and say how to attach the bundle itself."""
    from byog.bundles.publish import attach

    console.print(attach(bundle, pr, repo), highlight=False, soft_wrap=True)


# --- bench: sweep an endpoint, expand a plan (byog/bench) ------------------------------------

@command("bench")
def bench_cmd(
    endpoint: str = typer.Option(..., "--endpoint", help="Base URL of a running OpenAI-compatible server, e.g. http://127.0.0.1:8000."),
    model: Optional[str] = typer.Option(None, "--model", help="Served model name (default: the first of /v1/models)."),
    tokenizer: Optional[str] = typer.Option(None, "--tokenizer", help="Tokenizer path or id (vocabulary for random prompts; default: ask the server)."),
    workload: str = typer.Option("batch", "--workload", help="batch, concurrency or rate."),
    batch_sizes: str = typer.Option("1", "--batch-sizes", help="Batch workload: B values, e.g. 1,2,4."),
    concurrency: str = typer.Option("1", "--concurrency", help="Concurrency workload: C values, e.g. 1,8."),
    rates: str = typer.Option("1", "--rates", help="Rate workload: requests/s values, e.g. 0.5,2."),
    num_prompts: int = typer.Option(32, "--num-prompts", min=1, help="Concurrency/rate workloads: measured requests per point."),
    isl: str = typer.Option("32", "--isl", help="Input lengths in tokens, e.g. 1,1024."),
    osl: str = typer.Option("64", "--osl", help="Output lengths in tokens."),
    waves: int = typer.Option(3, "--waves", min=1, help="Batch workload: measured waves."),
    warmup_waves: int = typer.Option(1, "--warmup-waves", min=0, help="Batch workload: warm-up waves (not measured)."),
    api: str = typer.Option("completions", "--api", help="completions or chat."),
    prompts: str = typer.Option("random", "--prompts", help="random (token ids), mt_bench or gsm8k."),
    seed: int = typer.Option(1234, "--seed", help="Prompt (and Poisson arrival) seed."),
    reset_prefix_cache: bool = typer.Option(False, "--reset-prefix-cache", help="POST /reset_prefix_cache before each point (vLLM dev mode)."),
    plan: Optional[str] = typer.Option(None, "--plan", help="Take the workloads of this plan's server instead of the flags."),
    server: Optional[str] = typer.Option(None, "--server", help="With --plan: which server config the endpoint runs (default: the baseline)."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Datasets folder for --prompts mt_bench/gsm8k (default: BYOG_DATA_DIR, then ../shared/datasets)."),
    run_dir: Optional[Path] = typer.Option(None, "--run-dir", help="Run directory; an existing one resumes (default: runs/bench-<id>)."),
    as_json: bool = typer.Option(False, "--json", help="Print the points as JSON."),
) -> None:
    """Run the decode sweep against a running server and write raw rows + point records to a run directory."""
    from byog.bench.standalone import BenchFlags, bench_endpoint, parse_float_list, parse_int_list, render_points

    if api not in ("completions", "chat"):
        raise UsageError(f"--api must be completions or chat, not '{api}'")
    if prompts not in ("random", "mt_bench", "gsm8k"):
        raise UsageError(f"--prompts must be random, mt_bench or gsm8k, not '{prompts}'")
    flags = BenchFlags(
        endpoint=endpoint, model=model, tokenizer=tokenizer, workload=workload,
        batch_sizes=parse_int_list(batch_sizes, "--batch-sizes"), concurrencies=parse_int_list(concurrency, "--concurrency"),
        rates=parse_float_list(rates, "--rates"), num_prompts=num_prompts, isl=parse_int_list(isl, "--isl"),
        osl=parse_int_list(osl, "--osl"), waves=waves, warmup_waves=warmup_waves, api=api, prompts=prompts, seed=seed,
        reset_prefix_cache=reset_prefix_cache, plan=plan, server=server, data_dir=data_dir,
    )
    result = bench_endpoint(flags, run_dir, err_console if as_json else console)
    if as_json:
        print_json(result)
    else:
        render_points(console, result["points"], title=f"byog bench -> {result['run_dir']}")


@command("plan")
def plan_cmd(
    plan: Optional[str] = typer.Argument(None, help="Plan file or built-in profile name (default: smoke)."),
    from_run: Optional[Path] = typer.Option(None, "--from-run", help="An earlier run directory: use its measured start-up and TPOT."),
    tier: str = typer.Option("full", "--tier", help="smoke (minutes), standard, or full (the plan as written)."),
    gpus_per_node: int = typer.Option(4, "--gpus-per-node", help="GPUs per host: a server with more gets a per-node Ray launch (GB300 tray: 4)."),
    as_json: bool = typer.Option(False, "--json", help="Print the matrix and estimate as JSON."),
) -> None:
    """Show a plan's expanded bench matrix, each server's launch command, and the estimate of every tier."""
    from byog.plans.tiers import plan_overview, render_plan_overview

    overview = plan_overview(plan, tier, from_run, gpus_per_node)
    if as_json:
        print_json(overview)
    else:
        render_plan_overview(console, overview)


# --- evals: tasks against an endpoint, dataset cache (byog/evals) ------------------------------

@command("eval")
def eval_cmd(
    endpoint: str = typer.Option(..., "--endpoint", help="Base URL of a running OpenAI-compatible server, e.g. http://127.0.0.1:8000."),
    tasks: str = typer.Option("gsm8k", "--tasks", help="Comma-separated: gsm8k, gsm8k_cot_chat, aime25, gpqa_diamond, mrcr, mrcr_generated."),
    model: Optional[str] = typer.Option(None, "--model", help="Served model name (default: the first of /v1/models)."),
    tokenizer: Optional[str] = typer.Option(None, "--tokenizer", help="Tokenizer path or id, recorded and used by lm-eval's completions client."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="First N items of each task (default: all)."),
    passes: int = typer.Option(1, "--passes", min=1, help="K passes; pass k sends seed s_k with every request."),
    seeds: Optional[str] = typer.Option(None, "--seeds", help="Comma-separated seeds s_1..s_K (default 1234, 1235, ...)."),
    max_gen_toks: Optional[int] = typer.Option(None, "--max-gen-toks", min=1, help="Cap on generated tokens per answer (default: the task's, within the context)."),
    num_concurrent: int = typer.Option(8, "--num-concurrent", min=1, help="Requests in flight."),
    server_name: str = typer.Option("endpoint", "--server-name", help="Name of this server in the run directory."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Local datasets (default: BYOG_DATA_DIR, then ../shared/datasets)."),
    run_dir: Optional[Path] = typer.Option(None, "--run-dir", help="Run directory; finished tasks in it are skipped (default: runs/eval-<id>)."),
    as_json: bool = typer.Option(False, "--json", help="Print the results as JSON."),
) -> None:
    """Run accuracy tasks against a running server and write per-item records and results to a run directory."""
    from byog.evals.standalone import EvalFlags, eval_endpoint, render_evals

    flags = EvalFlags(endpoint=endpoint, tasks=tasks, model=model, tokenizer=tokenizer, limit=limit, passes=passes,
                      seeds=seeds, data_dir=data_dir, server_name=server_name, max_gen_toks=max_gen_toks,
                      num_concurrent=num_concurrent)
    result = eval_endpoint(flags, run_dir, err_console if as_json else console)
    if as_json:
        print_json(result)
    else:
        render_evals(console, result)


data_app = typer.Typer(help="Datasets for the evals: cache hub copies for offline runs.", no_args_is_help=True)
app.add_typer(data_app, name="data")


def _data_pull_cmd(
    tasks: str = typer.Option("gpqa_diamond,mrcr", "--tasks", help="Tasks whose hub datasets to cache (pinned revisions)."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Where to keep them (default: BYOG_DATA_DIR, then ../shared/datasets)."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Download the tasks' hub datasets at their pinned revisions for later offline runs (gated ones use HF_TOKEN)."""
    from byog.evals.standalone import data_pull

    pulled = data_pull(tasks, data_dir)
    if as_json:
        print_json(pulled)
    else:
        for entry in pulled:
            console.print(f"{entry['task']}: {entry['dataset_id']}@{entry['revision'] or 'main'} -> {entry['dir']}")


data_app.command("pull")(_guarded(_data_pull_cmd))


# --- images: build and inspect the eval images (byog/images/build.py) -------------------------

image_app = typer.Typer(help="Build and inspect byog's eval images (docker SDK).", no_args_is_help=True)
app.add_typer(image_app, name="image")


def _image_build_cmd(
    flavour: str = typer.Option("gpu", "--flavour", help="gpu (standard eval image), cpu (self-contained embedded default) or cpu-host (host's Python mounted; what CI uses)."),
    tag: Optional[str] = typer.Option(None, "--tag", help="Image tag (default: byog-eval:<version>-<flavour>)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Rebuild every step."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Build an eval image on the local Docker engine and print its tag, id, build time and size."""
    from byog.images.build import build_image

    result = build_image(flavour, tag, log=lambda line: err_console.print(line, style="dim", highlight=False, markup=False), nocache=no_cache)
    if as_json:
        print_json(result.to_dict())
    else:
        console.print(f"built {result.tag} ({result.image_id[:19]}) in {result.build_s:.1f} s, {result.size_bytes / 1e6:.0f} MB", highlight=False)


def _image_inspect_cmd(
    image: str = typer.Argument(..., help="Image reference (tag or id)."),
    no_probe: bool = typer.Option(False, "--no-probe", help="Do not start a throwaway container to read vLLM's version."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Id, RepoDigests, labels and the vLLM version inside an image."""
    from byog.images.build import inspect_image

    info = inspect_image(image, probe_vllm=not no_probe)
    if as_json:
        print_json(info)
        return
    from rich.table import Table

    table = Table(title=image, show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    table.add_row("id", info["id"])
    table.add_row("repo digests", "\n".join(info["repo_digests"]) or "none (built here, never pushed)")
    table.add_row("tags", ", ".join(info["repo_tags"]))
    table.add_row("vLLM", f"{info['vllm_version']} (from {info['vllm_version_from']})" if info["vllm_version"] else "unknown")
    table.add_row("size", f"{info['size_bytes'] / 1e6:.0f} MB")
    table.add_row("created", str(info["created"]))
    for key, value in sorted(info["labels"].items()):
        table.add_row(f"label {key}", value)
    console.print(table)


image_app.command("build")(_guarded(_image_build_cmd))
image_app.command("inspect")(_guarded(_image_inspect_cmd))


def main() -> None:
    app()


if __name__ == "__main__":
    main()
