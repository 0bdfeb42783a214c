"""The report a PR comment shows: re-rendered by verify from the verified bundle, every bundle
string escaped for GitHub markdown.

Why: report.md is written by the contributor, and any field in it (a plan name, an env string,
a server's argv, a claim's note) could carry HTML, links, images or @mentions that ping people.
The comment is therefore never the shipped report.md: it is ``render_report`` run again on the
recomputed summary and on a view of the bundle's files in which every JSON and YAML string went
through ``safe_text.md_field`` (plain names such as server names and point ids stay as they are,
so they still match each other and name files). It runs in verify's limited child, after every
check passed.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import yaml

from byog.bundles.checks.base import VerifyContext
from byog.bundles.checks.recompute import derived_summary
from byog.bundles.safe_text import md_deep
from byog.core.paths import RunDir
from byog.report.markdown import render_report
from byog.schemas.summary import Summary

_VIEW = ".comment-view"  # inside the extracted temp dir: member names never start with '.'


def _escaped_view(root: Path, names: list[str], parsed: dict[str, Any]) -> Path:
    """A mirror of the extracted bundle whose JSON and YAML strings are escaped (other files: hard links)."""
    view = root / _VIEW
    for name in names:
        target = view / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if name in parsed and name.endswith(".json"):
            target.write_text(json.dumps(md_deep(parsed[name]), ensure_ascii=False, allow_nan=False), encoding="utf-8")
        elif name in parsed:
            target.write_text(
                yaml.safe_dump(md_deep(parsed[name]), allow_unicode=True, sort_keys=False), encoding="utf-8"
            )
        else:
            try:
                os.link(root / name, target)
            except OSError:
                shutil.copyfile(root / name, target)
    return view


def render_comment_report(ctx: VerifyContext) -> str:
    summary = Summary.model_validate(md_deep(derived_summary(ctx).to_json()))
    view = _escaped_view(ctx.root, ctx.names, ctx.parsed)
    try:
        return render_report(RunDir(view), summary)
    finally:
        shutil.rmtree(view, ignore_errors=True)
