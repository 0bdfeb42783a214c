"""The task registry: every accuracy task byog runs, with everything that defines its score.

Each ``TaskSpec`` pins what a result depends on: the version of the definition, the dataset and
its revision, the prompt format, the generation settings and the answer extraction. All of it is
copied into ``results.json`` (``TaskSpec.record()``), so a reader knows exactly what was measured.

lm-eval tasks keep lm-eval's own YAML (prompt, filters, metric) and only have their data
re-pointed (``byog.evals.lm_eval_adapter``); the fields here describe that YAML, they do not
replace it. Revisions are hub commit SHAs; ``local`` names the file under the data dir that is
the same data (see ``byog/datasets/*/PROVENANCE.md``).

Recommended K (passes) and n (items) keep the accuracy gate sound: with them the planned power
(``byog.analysis.gate_power``, held against a simulation in ``tests/unit/analysis/test_gate_power.py``)
predicts that identical servers are declared equivalent in >= 95% of comparisons, and a server
one margin worse is flagged in >= 90%. ``standard_items`` x ``standard_passes`` is the standard
tier's cut (docs/statistics.md). Greedy tasks (temperature 0) gain nothing from K > 1: each pass repeats
the same answer, so K = 1; the sampled tasks need K passes to average the sampling noise down.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from byog.core.errors import UsageError
from byog.core.safe_text import one_line

if TYPE_CHECKING:
    from byog.schemas.plan import EvalSpec

Runner = Literal["lm_eval", "mrcr"]
Api = Literal["completions", "chat"]


@dataclass(frozen=True)
class DatasetRef:
    hub_id: str
    revision: str | None  # a hub commit SHA; None only where no SHA could be verified (see note)
    config: str | None = None
    splits: dict[str, str] = field(default_factory=dict)  # split -> file under the data dir (local copy)
    fixture: str | None = None  # file under byog/evals/fixtures (small, byog-written, same schema)
    hub_files: dict[str, str] = field(
        default_factory=dict
    )  # split -> glob inside the hub repo (what `byog data pull` keeps)
    gated: bool = False
    generated: bool = False  # rows byog generated (shipped under byog/datasets), never a published benchmark
    note: str = ""


@dataclass(frozen=True)
class TaskSpec:
    name: str
    version: str  # byog's version of this definition; bump on any change below
    runner: Runner
    api: Api
    dataset: DatasetRef
    prompt_format: str
    answer_extraction: str
    generation: dict[str, Any]  # lm-eval generation_kwargs (until, do_sample, temperature, max_gen_toks...)
    default_margin: float  # points (0-100)
    recommended_passes: int
    recommended_items: int
    lm_eval_task: str | None = None  # lm-eval's task name
    lm_eval_yaml: str | None = None  # path of lm-eval's YAML, relative to lm_eval/tasks (or byog/evals/tasks)
    yaml_in_byog: bool = False  # the YAML ships in byog/evals/tasks (a task lm-eval does not have)
    num_fewshot: int = 0
    eval_split: str = "test"  # the split lm-eval scores (GPQA has only "train")
    metric: str = "exact_match"
    lm_eval_filter: str | None = None  # which filter's score is the item score
    prompt_reserve_tokens: int = 1024  # tokens held for its prompts: this + the answer length must fit the context
    # simulation profile (mean accuracy, Beta concentration) used to justify the recommended K, n;
    # also the prior of the planned power (byog.analysis.gate_power, docs/statistics.md)
    sim_profile: tuple[float, float] = (0.5, 1.0)
    # the standard tier's n x K at the default margin: the cheapest design whose predicted
    # false-fail rate is <= 1% (n rounded up to 10s); tests/unit/plans/test_tiers.py recomputes it
    standard_items: int | None = None  # None: the recommended n
    standard_passes: int | None = None  # None: the recommended K

    @property
    def sampled(self) -> bool:
        return self.sampled_with({})

    def sampled_with(self, overrides: dict[str, Any]) -> bool:
        """Whether generation samples once a plan's ``gen_kwargs`` are laid over the task's."""
        generation = {**self.generation, **overrides}
        return bool(generation.get("do_sample")) or float(generation.get("temperature", 0) or 0) > 0

    def record(self) -> dict[str, Any]:
        """The task's definition as stored in results.json."""
        return {
            "name": self.name,
            "version": self.version,
            "runner": self.runner,
            "api": self.api,
            "lm_eval_task": self.lm_eval_task,
            "lm_eval_yaml": self.lm_eval_yaml,
            "num_fewshot": self.num_fewshot,
            "eval_split": self.eval_split,
            "prompt_format": self.prompt_format,
            "answer_extraction": self.answer_extraction,
            "metric": self.metric,
            "lm_eval_filter": self.lm_eval_filter,
            "generation": dict(self.generation),
            "sampled": self.sampled,
            "default_margin": self.default_margin,
            "recommended_passes": self.recommended_passes,
            "recommended_items": self.recommended_items,
            "dataset_id": self.dataset.hub_id,
            "dataset_config": self.dataset.config,
            "dataset_revision": self.dataset.revision,
            "gated": self.dataset.gated,
        }


LM_EVAL_MAX_GEN_TOKS = 256  # lm-eval's API models' max_tokens where the generation settings name none


class EvalDoesNotFit(UsageError):
    """An eval whose prompts and answers a server's context cannot hold. Exit 2."""


def _answer_setting(task: TaskSpec, overrides: Mapping[str, Any] | None) -> tuple[str, Any]:
    """The setting lm-eval sends as max_tokens, and its value: ``max_tokens`` before ``max_gen_toks``
    (lm-eval's OpenAI clients, ``_create_payload``), the plan's or CLI's overrides over the task's."""
    generation = {**task.generation, **(overrides or {})}
    key = "max_tokens" if "max_tokens" in generation else "max_gen_toks"
    return key, generation.get(key, LM_EVAL_MAX_GEN_TOKS)


def answer_tokens(task: TaskSpec, overrides: Mapping[str, Any] | None = None) -> int:
    """The most tokens one answer of the task may take, as its requests will ask for them."""
    key, value = _answer_setting(task, overrides)
    try:
        tokens = 0 if isinstance(value, bool) else int(str(value))
    except ValueError:
        tokens = 0
    if tokens < 1:
        raise UsageError(f"eval '{task.name}' sets {key} to '{one_line(str(value), 40)}', not a whole number above 0")
    return tokens


class EvalContextUnknown(UsageError):
    """An eval on a server that does not say its context: byog cannot know its prompts and answers fit
    (or, for MRCR, size its items), so it runs none of them. Exit 2."""


def check_eval_fits(task: TaskSpec, server: str, context: int, overrides: Mapping[str, Any] | None = None) -> None:
    """Refuse an lm-eval task whose prompt reserve + answer length exceed the server's context. Answers
    are never cut to fit: a score over shorter answers than the task sets measures another task. MRCR is
    exempt: its runner sizes each item to the context itself."""
    if task.runner != "lm_eval":
        return
    answer = answer_tokens(task, overrides)
    need = task.prompt_reserve_tokens + answer
    if need <= context:
        return
    room = context - task.prompt_reserve_tokens
    lower = f", or lower its {_answer_setting(task, overrides)[0]} to {room}" if room > 0 else ""
    raise EvalDoesNotFit(
        f"eval '{task.name}' reserves {task.prompt_reserve_tokens} tokens for its prompts and answers in up to "
        f"{answer}, but server '{server}' holds at most max_model_len = {context}: raise it to at least {need}{lower}"
    )


def check_eval_runs(
    task: TaskSpec, server: str, context: int | None, overrides: Mapping[str, Any] | None = None
) -> int:
    """The server's context, once an eval about to run on it is known to fit (``check_eval_fits``).
    ``context`` None: the server did not say it, and the eval is refused: a guessed context would cut
    answers or send prompts the server rejects, and MRCR sizes its items to it."""
    if context is None:
        if task.runner == "lm_eval":
            answer = answer_tokens(task, overrides)
            need = (
                f"needs {task.prompt_reserve_tokens + answer} tokens of context ({task.prompt_reserve_tokens} "
                f"reserved for its prompts + answers in up to {answer})"
            )
        else:
            need = "sizes its items to the server's context"
        raise EvalContextUnknown(
            f"eval '{task.name}' {need}, but server '{server}' does not say its context (its /v1/models card "
            "has no max_model_len): byog runs evals only on a server that states it, as vLLM does"
        )
    check_eval_fits(task, server, context, overrides)
    return context


GSM8K_DATA = DatasetRef(
    hub_id="openai/gsm8k",
    revision="cc7b047b6e5bb11b4f1af84efc572db110a51b3c",
    config="main",
    splits={"train": "gsm8k/train.jsonl", "test": "gsm8k/test.jsonl"},
    hub_files={"train": "main/train-*.parquet", "test": "main/test-*.parquet"},
    note="local copy: openai/grade-school-math@3101c7d (same rows as the hub's 'main' config)",
)

TASKS: dict[str, TaskSpec] = {
    spec.name: spec
    for spec in [
        TaskSpec(
            name="gsm8k",
            version="gsm8k-5shot-strict@1",
            runner="lm_eval",
            api="completions",
            dataset=GSM8K_DATA,
            lm_eval_task="gsm8k",
            lm_eval_yaml="gsm8k/gsm8k.yaml",
            num_fewshot=5,
            prompt_format="5-shot from train: 'Question: {question}\\nAnswer: {answer}' x5, then 'Question: "
            "{question}\\nAnswer:' (completions API)",
            answer_extraction="strict-match: first regex '#### (\\-?[0-9\\.\\,]+)' match, exact_match after removing "
            "',', '$', '(?s).*#### ', trailing '.'",
            generation={
                "until": ["Question:", "</s>", "<|im_end|>"],
                "do_sample": False,
                "temperature": 0.0,
                "max_gen_toks": 256,
            },
            lm_eval_filter="strict-match",
            default_margin=3.0,
            recommended_passes=1,
            recommended_items=1319,
            sim_profile=(0.75, 1.0),
            standard_items=500,
        ),
        TaskSpec(
            name="gsm8k_cot_chat",
            version="gsm8k-cot-zeroshot-chat@1",
            runner="lm_eval",
            api="chat",
            dataset=GSM8K_DATA,
            lm_eval_task="gsm8k_cot_zeroshot",
            lm_eval_yaml="gsm8k/gsm8k-cot-zeroshot.yaml",
            num_fewshot=0,
            prompt_format="one user turn through the server's chat template: \"Q: {question}\\nA: Let's think step by "
            'step."',
            answer_extraction="strict-match: regex 'The answer is (\\-?[0-9\\.\\,]+).', exact_match with gsm8k's "
            "normalisation",
            generation={
                "until": ["Q:", "</s>", "<|im_end|>"],
                "do_sample": False,
                "temperature": 0.0,
                "max_gen_toks": 512,
            },
            lm_eval_filter="strict-match",
            default_margin=3.0,
            recommended_passes=1,
            recommended_items=1319,
            sim_profile=(0.75, 1.0),
            standard_items=500,
        ),
        TaskSpec(
            name="aime25",
            version="aime25-chat-boxed-t0.6@1",
            runner="lm_eval",
            api="chat",
            dataset=DatasetRef(
                hub_id="math-ai/aime25",
                revision="563bb8404243c5f09de6ec262f2db674fe5bce9b",
                splits={"test": "aime2025/aime2025.jsonl"},
                hub_files={"test": "*.jsonl"},
                note="local copy: inclusionAI/AReaL@f55fe68 evaluation/data/aime25 (same fields and rows as "
                "math-ai/aime25)",
            ),
            lm_eval_task="aime25",
            lm_eval_yaml="aime/aime25.yaml",
            prompt_format="one user turn through the chat template: 'Question: {problem}\\nAnswer:'",
            answer_extraction="lm-eval aime process_results: last \\boxed{...} (else the text between the first and "
            "last '$'), hendrycks-math normalisation, equal to the integer answer",
            generation={
                "until": ["Question:", "</s>", "<|im_end|>", "<|eot_id|>"],
                "do_sample": True,
                "temperature": 0.6,
                "top_p": 0.95,
                "max_gen_toks": 32768,
            },
            default_margin=10.0,
            recommended_passes=16,
            recommended_items=30,
            sim_profile=(0.4, 1.0),
        ),
        TaskSpec(
            name="gpqa_diamond",
            version="gpqa-diamond-cot-zeroshot-chat-t0.6@1",
            runner="lm_eval",
            api="chat",
            dataset=DatasetRef(
                hub_id="Idavidrein/gpqa",
                revision=None,
                config="gpqa_diamond",
                fixture="gpqa_diamond.FIXTURE.csv",
                hub_files={"train": "gpqa_diamond.csv"},
                gated=True,
                note="gated: needs the user's HF token; no commit SHA could be verified offline, so a hub run records "
                "the SHA it resolved",
            ),
            lm_eval_task="gpqa_diamond_cot_zeroshot",
            lm_eval_yaml="gpqa/cot_zeroshot/gpqa_diamond_cot_zeroshot.yaml",
            eval_split="train",
            prompt_format="one user turn: 'What is the correct answer to this question:{Question}\\nChoices:\\n(A) "
            "..\\n(B) ..\\n(C) ..\\n(D) ..\\nLet's think step by step: ' (choices shuffled by lm-eval's seeded "
            "random, random_seed=0)",
            answer_extraction="flexible-extract: last '(A)'..'(D)' in the response (multi_choice_regex, case and "
            "punctuation ignored), exact_match with the correct letter",
            generation={"until": ["</s>"], "do_sample": True, "temperature": 0.6, "top_p": 0.95, "max_gen_toks": 2048},
            lm_eval_filter="flexible-extract",
            prompt_reserve_tokens=1024,
            default_margin=5.0,
            recommended_passes=10,
            recommended_items=198,
            sim_profile=(0.5, 2.0),
        ),
        TaskSpec(
            name="arithmetic_generated",
            version="arithmetic-generated-chat-first-number@1",
            runner="lm_eval",
            api="chat",
            dataset=DatasetRef(
                hub_id="byog/arithmetic-generated",
                revision=None,
                splits={"test": "arithmetic/test.jsonl"},
                generated=True,
                note="generated by byog.evals.arithmetic_generate (seed 20261201): not a published benchmark",
            ),
            lm_eval_task="arithmetic_generated",
            lm_eval_yaml="arithmetic_generated.yaml",
            yaml_in_byog=True,
            prompt_format=(
                "one user turn through the chat template: 'What is {a} {op} {b}? Answer with the number only.'"
            ),
            answer_extraction=(
                "first-number: the integer after the reply's first '=', else the integer the reply starts with "
                "(else '[invalid]') (regex '(?s)^(?:.*?=\\s*)?(-?\\d+)'), exact_match with the answer"
            ),
            generation={"until": ["\n\n"], "do_sample": False, "temperature": 0.0, "max_gen_toks": 16},
            lm_eval_filter="first-number",
            prompt_reserve_tokens=64,
            default_margin=10.0,
            recommended_passes=1,
            recommended_items=200,
            sim_profile=(0.5, 1.0),
            standard_items=90,
        ),
        TaskSpec(
            name="mrcr",
            version="mrcr-8needle-official-grader@1",
            runner="mrcr",
            eval_split="train",
            api="chat",
            dataset=DatasetRef(
                hub_id="openai/mrcr",
                revision="f4c69fae7cf81f7ca26b9fee34b392a50f6b8a1d",
                fixture="mrcr.FIXTURE.jsonl",
                hub_files={"train": "8needle/*.parquet"},
                note="MRCR v2 only from the hub rows; fixture and generated rows are labelled as such",
            ),
            prompt_format="the row's 'prompt' messages verbatim (multi-turn chat), no system prompt",
            answer_extraction="official grader: 0 unless the response starts with random_string_to_prepend; else "
            "difflib.SequenceMatcher(None, response minus prefix, answer minus prefix).ratio()",
            generation={"do_sample": False, "temperature": 0.0},
            metric="sequence_match_ratio",
            default_margin=5.0,
            recommended_passes=1,
            recommended_items=200,
            sim_profile=(0.5, 1.0),
        ),
        TaskSpec(
            name="mrcr_generated",
            version="mrcr-generated-8needle@1",
            runner="mrcr",
            eval_split="train",
            api="chat",
            dataset=DatasetRef(
                hub_id="byog/mrcr-generated",
                revision=None,
                note="rows made by byog.evals.mrcr_generate.generate_rows at target lengths: not MRCR v2",
            ),
            prompt_format="generated MRCR-format conversation (openai/mrcr schema), the row's messages verbatim",
            answer_extraction="official MRCR grader (prefix check, then SequenceMatcher ratio)",
            generation={"do_sample": False, "temperature": 0.0},
            metric="sequence_match_ratio",
            default_margin=5.0,
            recommended_passes=1,
            recommended_items=200,
            sim_profile=(0.5, 1.0),
        ),
    ]
}


def get_task(name: str) -> TaskSpec:
    try:
        return TASKS[name]
    except KeyError:
        raise UsageError(f"unknown eval task '{name}'; known tasks: {', '.join(sorted(TASKS))}") from None


def stops_early(spec: EvalSpec) -> bool:
    """Whether a plan eval can stop at its looks: it sets looks and a limit (the looks are fractions of
    it) and lm-eval runs the task (its ``samples=`` runs a look's chunk; byog's MRCR runner scores whole)."""
    task = TASKS.get(spec.task)
    return spec.looks is not None and spec.limit is not None and task is not None and task.runner == "lm_eval"


def parse_task_list(text: str) -> list[TaskSpec]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise UsageError("--tasks needs at least one task name")
    return [get_task(name) for name in names]
