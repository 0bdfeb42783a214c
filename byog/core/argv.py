"""Reading a server's command line: one helper for plans (fit checks) and runtimes (records)."""

from __future__ import annotations


def arg_value(args: list[str], flag: str) -> str | None:
    """The value of `--flag V` or `--flag=V` in an argv, last one wins (as argparse does)."""
    value = None
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(flag + "="):
            value = arg.split("=", 1)[1]
    return value
