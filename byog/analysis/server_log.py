"""Why a server failed, in vLLM's own words, from its log (``servers/<name>/server.log``).

One home for reading the root cause out of a log: a server that did not start, a sweep whose
server died at its first request, and a multi-node start-up where one node died all report this
sentence instead of "the server died". Only the lines since the server last started are read.

vLLM logs the root cause first, in the process where it happened (each line prefixed
``(EngineCore pid=..)``, ``(VllmWorker-0 pid=..)``, ``(Worker_TP1 pid=..)``), and then wrappers in
the other processes that only point back at it ("WorkerProc initialization failed due to an
exception in a background process. See stack trace for root cause", "Engine core initialization
failed. See root cause above"), often a hundred lines later. So the cause is the first error of
each engine-side process (every prefixed process but the API server) that is not a wrapper: one
sentence, the ranks named when more than one failed. A log with no such line falls back to the
last error line that is not a wrapper, else the last wrapper, else the command-line parser's refusal.
"""

from __future__ import annotations

import re

from byog.schemas.server import SERVER_START_MARKER

# ``SomethingError: message`` / ``SomethingException: message`` / ``Exception: message``, possibly
# module-qualified, anywhere on a line (after vLLM's "(Worker pid=..) ERROR ... [file:line]" prefix).
ERROR_LINE = re.compile(r"(?:^|[\s(])((?:[A-Za-z_][\w]*\.)*(?:[A-Z]\w*)?(?:Error|Exception)): (\S.*)$")
# Phrases and types of the wrappers that say *that* something failed and point elsewhere for *why*.
WRAPPER_PHRASES = (
    "see root cause above",
    "for the root cause",
    "for root cause",
    "see stack trace (above)",
    "exception in a background process",
)
WRAPPER_TYPES = ("EngineDeadError", "EngineGenerateError")
# Log levels whose lines merely mention an error (a warning quoting "OSError: [Errno 24]").
NOT_ERRORS = (" WARNING ", " INFO ", " DEBUG ")
# argparse's refusal of a command line: ``vllm serve: error: argument --dtype: invalid choice: ...``, always
# after its ``usage:`` line; without one, ``X: error:`` is someone else's (srun's "srun: error: n1: task 0: Killed")
ARGPARSE_LINE = re.compile(r"^[^:]+: error: (\S.*)$")
USAGE_LINE = "usage: "
# vLLM's per-process prefix: ``(EngineCore_DP0 pid=12)``, ``(VllmWorker-0 pid=13)``, ``(RayWorkerWrapper pid=9, ip=..)``
PROCESS_PREFIX = re.compile(r"^\((?P<process>[A-Za-z_][\w-]*)(?: [^)]*)?\) ")
FRONT_END = ("APIServer",)  # the process that serves HTTP: its errors wrap the engine's
# vLLM's own line naming the attention backend it chose (platforms/cuda.py, cpu.py): "Using FLASH_ATTN
# backend.", "Using AttentionBackendEnum.FLASH_ATTN backend.", "Using FLASH_ATTN attention backend out of ..."
BACKEND_LINE = re.compile(r"\bUsing (?:AttentionBackendEnum\.)?([A-Z][A-Z0-9_]+) (?:attention )?backend\b")


def _sentence(line: str) -> str | None:
    if any(level in line for level in NOT_ERRORS):
        return None
    match = ERROR_LINE.search(line.strip())
    if not match:
        return None
    kind = match.group(1).rsplit(".", 1)[-1]
    return f"{kind}: {match.group(2).strip()}"


def _is_wrapper(sentence: str) -> bool:
    return sentence.split(":", 1)[0] in WRAPPER_TYPES or any(p in sentence.lower() for p in WRAPPER_PHRASES)


def _process(line: str) -> str | None:
    match = PROCESS_PREFIX.match(line)
    return match.group("process") if match else None


def _engine_causes(lines: list[str]) -> dict[str, str]:
    """Engine-side process -> its first error that is not a wrapper, in the order they failed."""
    found: dict[str, str] = {}
    for line in lines:
        process = _process(line)
        if process is None or process in FRONT_END or process in found:
            continue
        sentence = _sentence(line)
        if sentence is not None and not _is_wrapper(sentence):
            found[process] = sentence
    return found


def _one_sentence(causes: dict[str, str]) -> str:
    """One cause as it is; several ranks' causes with the ranks named (a shared cause once)."""
    by_cause: dict[str, list[str]] = {}
    for process, sentence in causes.items():
        by_cause.setdefault(sentence, []).append(process)
    if len(causes) == 1:
        return next(iter(causes.values()))
    return "; ".join(f"{sentence} ({', '.join(processes)})" for sentence, processes in by_cause.items())


def _last_error(lines: list[str]) -> str | None:
    found = None
    for line in reversed(lines):
        sentence = _sentence(line)
        if sentence is None:
            continue
        if not _is_wrapper(sentence):
            return sentence
        found = found or sentence
    if found is None:
        refused = _argparse_refusal(lines)
        found = f"vLLM refused its arguments: {refused}" if refused else None
    return found


def _argparse_refusal(lines: list[str]) -> str | None:
    """The first ``PROG: error: ...`` line after the last ``usage:`` line: argparse prints the two
    together, and what follows them (a launcher killing the step) is not the parser's."""
    refused, awaiting = None, False
    for line in lines:
        if line.startswith(USAGE_LINE):
            awaiting = True
        elif awaiting and (match := ARGPARSE_LINE.match(line)):
            refused, awaiting = match.group(1).strip(), False
    return refused


def root_cause(text: str) -> str | None:
    """The first error of each engine-side process since the server last started, in one
    sentence; else the fallbacks of the module docstring; None when the log shows no error line."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(SERVER_START_MARKER)]
    recent = lines[starts[-1] + 1 :] if starts else lines
    causes = _engine_causes(recent)
    return _one_sentence(causes) if causes else _last_error(recent)


# What a starting vLLM is doing, from the lines it logs as it enters each phase (vLLM 0.32; CPU and
# CUDA): (phase, phrases any of which starts it). A later phase's line moves the phase on.
START_PHASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("starting the engine", ("Initializing a V1 LLM engine",)),
    ("loading weights", ("Starting to load model", "Loading safetensors checkpoint shards", "Loading weights")),
    (
        "compiling",
        # not a bare "torch.compile": an eager server's first lines say "disabling torch.compile"
        ("Warming up model for the compilation", "Dynamo bytecode transform", "Compiling a graph"),
    ),
    ("sizing the KV cache", ("Available KV cache memory", "KV cache size", "Memory profiling takes")),
    ("capturing graphs", ("Capturing CUDA graphs", "Capturing graphs", "Graph capturing")),
    ("starting the API server", ("init engine (profile, create kv cache, warmup model) took", "Starting vLLM")),
    ("ready", ("Application startup complete",)),
)


def start_phase(line: str) -> str | None:
    """The start-up phase a vLLM log line begins, or None when it begins none."""
    for phase, phrases in reversed(START_PHASES):
        if any(phrase in line for phrase in phrases):
            return phase
    return None


def attention_backend(log: str) -> str | None:
    """The attention backend vLLM's last start says it used (its last such line), or None where it says none."""
    found = BACKEND_LINE.findall(log.rsplit(SERVER_START_MARKER, 1)[-1])
    return found[-1] if found else None
