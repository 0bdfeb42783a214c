"""`byog init`: write a plan for your PR from a few answers, asked on a terminal, taken from flags otherwise.

Without a terminal on stdin nothing is asked: a missing answer is one sentence naming its flag.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from byog.cli.common import ForOpt, console
from byog.core.errors import UsageError

if TYPE_CHECKING:  # imported when the command runs: --help stays light
    from byog.plans.init_plan import InitAnswers
    from byog.schemas.plan import Plan

# what each answer is, the flag that gives it, and the kinds it takes (KIND or KIND:VALUE)
CANDIDATE_HELP = (
    "What your PR is: installed (the vLLM beside byog, e.g. your checkout installed editable), "
    "python:PATH (another Python environment: interpreter or venv), image:REF, wheel:PATH (layered over "
    "the stock image), flags:'ARGS' (extra `vllm serve` flags), endpoint:URL."
)
BASELINE_HELP = (
    "What it is compared with (default merge-base: stock vLLM at your PR's merge base, the wheel vLLM publishes "
    "for that commit): installed, python:PATH, image:REF, flags:'ARGS' (the candidate's build with these flags), "
    "endpoint:URL."
)
Ask = Callable[[str, str], str]


def _build(spec: str, flag: str, kinds: tuple[str, ...]) -> tuple[str, str]:
    kind, _, value = spec.partition(":")
    kind = kind.strip()
    if kind not in kinds:
        raise UsageError(f"{flag} {spec!r}: the kind is one of {', '.join(kinds)} (KIND or KIND:VALUE)")
    needs_value = kind not in ("installed", "merge-base", "flags")
    if needs_value and not value.strip():
        raise UsageError(f"{flag} {spec!r}: {kind} needs a value ({kind}:...)")
    return kind, value.strip()


def _yes(text: str) -> bool:
    return text.strip().lower() in ("y", "yes", "true", "1")


def init_cmd(
    model: str | None = typer.Option(None, "--model", help="The model: a Hugging Face id or a local folder."),
    candidate: str | None = typer.Option(None, "--candidate", help=CANDIDATE_HELP),
    switch: list[str] = typer.Option(
        [], "--switch", help="KEY=VALUE of the PR's --additional-config switch (repeat for several keys)."
    ),
    baseline: str | None = typer.Option(None, "--baseline", help=BASELINE_HELP),
    checkout: Path | None = typer.Option(
        None, "--checkout", help="Your PR's git checkout (default: the editable install's source directory)."
    ),
    install_baseline: Path | None = typer.Option(
        None, "--install-baseline", help="Create a venv here and install the merge-base wheel into it."
    ),
    variant: str | None = typer.Option(
        None, "--variant", help="The merge-base wheel's variant (cpu, cu129, cu130; default: CUDA, cpu without GPUs)."
    ),
    tp: int | None = typer.Option(None, "--tp", min=1, help="Tensor parallel size (default: smallest that fits)."),
    isl: int | None = typer.Option(None, "--isl", min=1, help="The claim's input length (default 1; CPU 32)."),
    osl: int | None = typer.Option(None, "--osl", min=1, help="The claim's output length (default 1000; CPU 64)."),
    long_context: bool | None = typer.Option(None, "--long-context/--no-long-context", help="Add ISL 8k/32k points."),
    reasoning_evals: bool | None = typer.Option(
        None, "--reasoning-evals/--no-reasoning-evals", help="Add AIME25 and GPQA-Diamond to GSM8K."
    ),
    subject: ForOpt = None,
    name: str | None = typer.Option(None, "--name", help="The plan's name (default: init-<model>)."),
    out: Path = typer.Option(Path("plan.yaml"), "-o", "--out", help="Where to write the plan."),
    force: bool = typer.Option(False, "--force", help="Write over an existing file."),
) -> None:
    """Write a commented plan.yaml for your PR (asks on a terminal), then show what `byog plan` says of it."""
    from byog.pipeline.init import InitRequest, write_plan
    from byog.plans.init_plan import BASELINE_KINDS, BUILD_KINDS, Build

    if out.exists() and not force:
        raise UsageError(f"{out} exists: byog init writes nothing over it without --force")
    answers = _Answers(_terminal_ask if sys.stdin.isatty() else None)
    ask = answers.ask
    model = answers.get(model, "--model", "Model (a Hugging Face id or a local folder)", None)
    cand_kind, cand_value = _build(
        answers.get(
            candidate,
            "--candidate",
            "Candidate (installed, python:PATH, image:REF, wheel:PATH, flags:ARGS, endpoint:URL)",
            None,
        ),
        "--candidate",
        BUILD_KINDS,
    )
    if not switch and ask is not None and candidate is None:
        given = ask("Switch on the PR build (--additional-config KEY=VALUE, empty for none)", "")
        switch = [given] if given.strip() else []
    base_spec = answers.get(
        baseline,
        "--baseline",
        "Baseline (merge-base, installed, python:PATH, image:REF, flags:ARGS, endpoint:URL)",
        "merge-base",
    )
    base_kind, base_value = _build(base_spec, "--baseline", BASELINE_KINDS)
    if long_context is None:
        long_context = answers.yes("Long-context points (ISL 8k, 32k)? y/n")
    if reasoning_evals is None:
        reasoning_evals = answers.yes("Reasoning evals (AIME25, GPQA-Diamond) besides GSM8K? y/n")
    if subject is None and ask is not None:
        subject = ask("The PR (OWNER/REPO#N, empty for none)", "").strip() or None
    req = InitRequest(
        model=model,
        candidate=Build(cand_kind, cand_value),
        baseline=None if base_kind == "merge-base" else Build(base_kind, base_value),
        switch=tuple(switch),
        checkout=checkout,
        tp=tp,
        isl=isl,
        osl=osl,
        long_context=long_context,
        reasoning_evals=reasoning_evals,
        subject=subject,
        variant=variant,
        install_baseline=install_baseline,
        name=name,
    )
    _said_written(*write_plan(req, out, force), out, subject)


class _Answers:
    """Each answer from its flag, else asked on the terminal (``ask``), else its default, else one
    sentence naming the flag."""

    def __init__(self, ask: Ask | None) -> None:
        self.ask = ask

    def get(self, value: str | None, flag: str, question: str, default: str | None) -> str:
        if value is not None:
            return value
        if self.ask is not None:
            given = self.ask(question, default or "").strip()
            if given or default is not None:
                return given or (default or "")
            raise UsageError(f"byog init needs {flag}: the answer was empty")
        if default is not None:
            return default
        raise UsageError(f"byog init needs {flag} (no terminal to ask on)")

    def yes(self, question: str) -> bool:
        """A y/n question (default no); no terminal: no."""
        return self.ask is not None and _yes(self.ask(question, "n"))


def _said_written(plan: Plan, resolved: InitAnswers, out: Path, subject: str | None) -> None:
    """What byog init resolved and wrote, `byog plan`'s summary of it, and the next commands."""
    from byog.cli.run import render_plan_summary
    from byog.pipeline.planview import plan_overview

    console.print(f"GPUs: {resolved.gpus.said}; TP {resolved.tp}: {resolved.tp_why}", highlight=False)
    console.print(f"baseline: {resolved.baseline.how}", highlight=False, soft_wrap=True)
    if resolved.baseline.distance:
        console.print(resolved.baseline.distance, highlight=False)
    console.print(f"wrote {out} (plan '{plan.name}', {len(plan.servers)} servers)", highlight=False)
    render_plan_summary(plan_overview(str(out), "full"))
    tail = f" --for {subject}" if subject else " --for OWNER/REPO#N"
    console.print(f"next: byog run {out} --tier smoke, then byog run {out} --tier standard{tail}", highlight=False)


def _terminal_ask(question: str, default: str) -> str:
    return str(typer.prompt(question, default=default, show_default=bool(default)))
