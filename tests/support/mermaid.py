"""Mermaid charts drawn for real: mermaid-cli (npm ``@mermaid-js/mermaid-cli``, the ``mmdc``
command) in the system Chromium, SVG out.

``mmdc`` is found on PATH (scripts/test.sh installs it with ``npm install -g``, no browser
download) and Chromium at /usr/bin/chromium (Debian's ``chromium``). Missing either skips the
test on a developer's machine; where scripts/test.sh installed them (BYOG_REQUIRE_MERMAID=1) it
fails it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"


def _tools() -> str:
    mmdc = shutil.which("mmdc")
    missing = [
        name
        for name, found in (
            ("mmdc (npm @mermaid-js/mermaid-cli)", mmdc),
            ("chromium", Path(CHROMIUM).is_file() or None),
        )
        if not found
    ]
    if missing:
        message = f"{' and '.join(missing)} not installed"
        if os.environ.get("BYOG_REQUIRE_MERMAID") == "1":
            pytest.fail(message)
        pytest.skip(message)
    assert mmdc is not None
    return mmdc


def render_markdown_charts(markdown: str, folder: Path) -> list[str]:
    """Every ```mermaid block of ``markdown`` drawn as SVG (in order); mmdc fails on a chart it cannot parse."""
    mmdc = _tools()
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "puppeteer.json"
    config.write_text(json.dumps({"executablePath": CHROMIUM, "args": ["--no-sandbox"]}))
    source, out = folder / "in.md", folder / "out.md"
    source.write_text(markdown, encoding="utf-8")
    subprocess.run(
        [mmdc, "--quiet", "-p", str(config), "-i", str(source), "-o", str(out), "-e", "svg", "-w", "800"],
        check=True,
        capture_output=True,
        timeout=300,
    )
    drawn = sorted(folder.glob("out-*.svg"), key=lambda p: int(re.findall(r"\d+", p.stem)[-1]))
    return [p.read_text(encoding="utf-8") for p in drawn]
