"""Why a server failed, in vLLM's own words, from its log (``servers/<name>/server.log``).

One home for reading the root cause out of a log: a sweep whose server died at its first
request, and a multi-node start-up where one node died, both report this sentence instead of
"the server died". vLLM logs the root cause first and then wrappers that only point back at it
("EngineCore encountered an issue. See stack trace (above) for the root cause", "Worker failed
with error '...', please check the stack trace above for the root cause", "Engine core
initialization failed. See root cause above"), so the answer is the last error line that is not
such a wrapper, read only from the lines since the server last started.
"""

from __future__ import annotations

import re

from byog.schemas.server import SERVER_START_MARKER

# ``SomethingError: message`` / ``SomethingException: message`` / ``Exception: message``, possibly
# module-qualified, anywhere on a line (after vLLM's "(Worker pid=..) ERROR ... [file:line]" prefix).
ERROR_LINE = re.compile(r"(?:^|[\s(])((?:[A-Za-z_][\w]*\.)*(?:[A-Z]\w*)?(?:Error|Exception)): (\S.*)$")
# Phrases and types of the wrappers that say *that* something failed and point elsewhere for *why*.
WRAPPER_PHRASES = ("see root cause above", "for the root cause", "see stack trace (above)")
WRAPPER_TYPES = ("EngineDeadError", "EngineGenerateError")
# Log levels whose lines merely mention an error (a warning quoting "OSError: [Errno 24]").
NOT_ERRORS = (" WARNING ", " INFO ", " DEBUG ")
# argparse's refusal of a command line: ``vllm serve: error: argument --dtype: invalid choice: ...``
ARGPARSE_LINE = re.compile(r"^[^:]+: error: (\S.*)$")


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


def root_cause(text: str) -> str | None:
    """The last error line since the server last started that is not a wrapper; else the last
    wrapper; else the command-line parser's refusal; None when the log shows no error line."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(SERVER_START_MARKER)]
    found = None
    recent = lines[starts[-1] + 1 :] if starts else lines
    for line in reversed(recent):
        sentence = _sentence(line)
        if sentence is None:
            continue
        if not _is_wrapper(sentence):
            return sentence
        found = found or sentence
    if found is None:
        refused = [m.group(1).strip() for m in map(ARGPARSE_LINE.match, recent) if m]
        found = f"vLLM refused its arguments: {refused[-1]}" if refused else None
    return found
