"""A PR comment as a reviewer sees it: markdown -> HTML by cmark-gfm (GitHub's extensions),
Mermaid blocks drawn by mermaid-cli, GitHub's markdown CSS (npm ``github-markdown-css``), then a
PNG screenshot by headless Chromium. For docs/pr-workflow.md's pictures; the tests use the same
tools (tests/support/cmark.py, tests/support/mermaid.py).

    python scripts/comment_screenshot.py comment.md out.png \
        --css node_modules/github-markdown-css/github-markdown-light.css

Needs cmark-gfm, mmdc and /usr/bin/chromium (scripts/test.sh installs them).
"""

from __future__ import annotations

import argparse
import html
import json
import re
import subprocess
import tempfile
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
_MERMAID_PRE = re.compile(r'<pre lang="mermaid"><code>.*?</code></pre>', re.S)


def to_html(markdown: str, css: str, work: Path) -> str:
    body = subprocess.run(
        ["cmark-gfm", "--unsafe", "--github-pre-lang", "-e", "table", "-e", "strikethrough", "-e", "autolink"],
        input=markdown,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    if _MERMAID_PRE.search(body):
        config = work / "puppeteer.json"
        config.write_text(json.dumps({"executablePath": CHROMIUM, "args": ["--no-sandbox"]}))
        (work / "in.md").write_text(markdown, encoding="utf-8")
        subprocess.run(
            [
                "mmdc",
                "-q",
                "-p",
                str(config),
                "-i",
                str(work / "in.md"),
                "-o",
                str(work / "out.md"),
                "-e",
                "svg",
                "-w",
                "760",
            ],
            check=True,
        )
        svgs = iter(sorted(work.glob("out-*.svg"), key=lambda p: int(p.stem.rsplit("-", 1)[1])))
        body = _MERMAID_PRE.sub(lambda _: f'<p><img src="{next(svgs).name}" style="max-width:100%"></p>', body)
    return (
        f'<!doctype html><meta charset="utf-8"><style>{css}\nbody{{margin:0;background:#fff}}'
        ".markdown-body{box-sizing:border-box;width:880px;padding:16px 24px;border:1px solid #d0d7de;"
        'border-radius:6px;margin:12px}</style><article class="markdown-body">'
        f"{body}</article>"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("comment", type=Path)
    parser.add_argument("png", type=Path)
    parser.add_argument("--css", type=Path, required=True)
    parser.add_argument("--height", type=int, default=1400)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        page = work / "comment.html"
        page.write_text(to_html(args.comment.read_text(encoding="utf-8"), args.css.read_text(), work), encoding="utf-8")
        subprocess.run(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--screenshot={args.png.resolve()}",
                f"--window-size=906,{args.height}",
                page.as_uri(),
            ],
            check=True,
            capture_output=True,
        )
    print(f"wrote {args.png} ({html.escape(str(args.png.stat().st_size))} bytes)")


if __name__ == "__main__":
    main()
