"""`byog image inspect` prints an image's labels (its builder's text) escaped, on a terminal and in a pipe.

No Docker engine here: the inspect answer is the dict ``byog.images.inspect.inspect_image`` returns,
labels as a wheel layer writes them plus what a hostile builder adds.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from byog.cli import app, images
from byog.cli.console_reporter import print_table
from byog.images import inspect
from byog.images.wheel import WheelIdentity
from byog.images.wheel_layer import wheel_labels
from tests.support.cmark import render_gfm

SHA = "ab" * 32
BASE_ID = "sha256:" + "cd" * 32
HOSTILE_LABELS = {
    "org.opencontainers.image.url": "\x1b]8;;https://evil.example\x1b\\docs\x1b]8;;\x1b\\",
    "clear": "\x1b[2J\x1b[3J\x1b[H",
    "byog.vllm-wheel.file": "vllm-0.32.0-py3-none-any.whl\u202elhw.exe",
    "note": "fine\nok   signature: trusted signer maintainer@vllm (SHA256:forged)",
}


def info() -> dict[str, Any]:
    wheel = WheelIdentity("vllm-0.32.0-py3-none-any.whl", SHA, "0.32.0", None, "no commit")
    labels = {**wheel_labels(wheel, "byog-eval:0.1.0-cpu", BASE_ID), **HOSTILE_LABELS}
    return {
        "ref": "evil:latest",
        "id": "sha256:" + "ee" * 32,
        "repo_digests": [],
        "repo_tags": ["evil:latest"],
        "labels": labels,
        "created": "2026-01-01T00:00:00Z",
        "size_bytes": 10**9,
        "platform": "linux/amd64",
        "entrypoint": None,
        "cmd": None,
        "vllm_version": None,
        "vllm_version_from": None,
    }


def assert_inert(printed: str) -> None:
    assert "\x1b" not in printed and "\u202e" not in printed
    assert not any(line.lstrip("│| ").startswith("ok   signature") for line in printed.splitlines())


def test_on_a_terminal_every_label_is_a_visible_escape() -> None:
    out = io.StringIO()
    print_table(
        Console(file=out, force_terminal=True, width=400, color_system=None), images.inspect_table("evil", info())
    )
    assert_inert(out.getvalue())


def test_inspect_piped_prints_inert_markdown(monkeypatch: pytest.MonkeyPatch) -> None:
    # the command imports it when it runs: replace it where it lives
    monkeypatch.setattr(inspect, "inspect_image", lambda ref, probe_vllm=True: info())
    result = CliRunner().invoke(app, ["image", "inspect", "evil:latest", "--no-probe"])
    assert result.exit_code == 0, result.output
    assert_inert(result.output)
    html = render_gfm(result.output)
    assert "<a " not in html and "\\x1b]8;;https\u2060://evil.example" in html
    assert "label byog.vllm-wheel.sha256" in result.output and SHA in result.output
