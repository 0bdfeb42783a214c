"""`byog image build` and `byog image inspect`: the eval images, through the docker SDK."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from byog.cli.common import JsonOpt, command, console, err_console, print_json
from byog.cli.console_reporter import print_table, say
from byog.core.reporter import Table

image_app = typer.Typer(help="Build and inspect byog's eval images (docker SDK).", no_args_is_help=True)


@command(image_app, "build")
def image_build_cmd(
    flavour: str = typer.Option(
        "gpu",
        "--flavour",
        help="gpu (standard eval image), cpu (self-contained embedded default) or cpu-host (host's Python mounted; "
        "what CI uses).",
    ),
    tag: str | None = typer.Option(None, "--tag", help="Image tag (default: byog-eval:<version>-<flavour>)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Rebuild every step."),
    platform: str | None = typer.Option(
        None, "--platform", help="linux/arm64 (GB200/GB300 Grace trays) or linux/amd64 (default: the engine's own)."
    ),
    vllm_wheel: Path | None = typer.Option(
        None,
        "--vllm-wheel",
        help="A vLLM wheel (a PR's build) to install over the flavour's image, one layer; the labels record its "
        "sha256, commit and the base image's id.",
    ),
    as_json: JsonOpt = False,
) -> None:
    """Build an eval image on the local Docker engine and print its tag, id, build time and size."""
    from byog.images.build import build_image
    from byog.images.wheel_layer import build_wheel_image

    def log(line: str) -> None:
        say(err_console, line, style="dim")

    if vllm_wheel is not None:
        result = build_wheel_image(flavour, vllm_wheel, tag, log=log, nocache=no_cache, platform=platform)
    else:
        result = build_image(flavour, tag, log=log, nocache=no_cache, platform=platform)
    if as_json:
        print_json(result.to_dict())
    else:
        say(
            console,
            f"built {result.tag} ({result.image_id[:19]}, {result.platform or 'platform unknown'}) "
            f"in {result.build_s:.1f} s, {result.size_bytes / 1e6:.0f} MB",
        )


@command(image_app, "inspect")
def image_inspect_cmd(
    image: str = typer.Argument(..., help="Image reference (tag or id)."),
    no_probe: bool = typer.Option(
        False, "--no-probe", help="Do not start a throwaway container to read vLLM's version."
    ),
    as_json: JsonOpt = False,
) -> None:
    """Id, RepoDigests, labels and the vLLM version inside an image."""
    from byog.images.inspect import inspect_image

    info = inspect_image(image, probe_vllm=not no_probe)
    if as_json:
        print_json(info)
        return

    print_table(console, inspect_table(image, info))


def inspect_table(image: str, info: dict[str, Any]) -> Table:
    """``image inspect``'s table; every value (the image's labels are its builder's text) is escaped
    where it is printed (``print_table``)."""
    from byog.images.wheel_layer import wheel_rows

    table = Table(image, ["field", "value"], show_header=False)
    table = table.with_row("id", info["id"])
    table = table.with_row("repo digests", ", ".join(info["repo_digests"]) or "none (built here, never pushed)")
    table = table.with_row("tags", ", ".join(info["repo_tags"]))
    table = table.with_row(
        "vLLM", f"{info['vllm_version']} (from {info['vllm_version_from']})" if info["vllm_version"] else "unknown"
    )
    for field, value in wheel_rows(info["labels"]):
        table = table.with_row(field, value)
    table = table.with_row("platform", info.get("platform") or "unknown")
    table = table.with_row("size", f"{info['size_bytes'] / 1e6:.0f} MB")
    table = table.with_row("created", str(info["created"]))
    for key, value in sorted(info["labels"].items()):
        table = table.with_row(f"label {key}", str(value))
    return table
