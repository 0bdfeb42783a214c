"""A PR comment as a reviewer sees it: markdown -> HTML by cmark-gfm (GitHub's extensions),
Mermaid blocks drawn by mermaid-cli, GitHub's markdown CSS (npm ``github-markdown-css``), then a
PNG screenshot by headless Chromium at 1000 px (GitHub's 880 px comment column inside it). For
docs/pr-workflow.md's pictures and the first-screen figures of issue 48; the tests use the same
tools (tests/support/cmark.py, tests/support/mermaid.py).

    python scripts/comment_screenshot.py comment.md out.png \
        --css node_modules/github-markdown-css/github-markdown-light.css

Each Mermaid block is drawn on its own: one that mermaid-cli cannot parse becomes a red box with
its error, as GitHub shows it, instead of stopping the picture. The comment is drawn as GitHub
first shows it (``<details>`` closed); the script prints its height in px and in screens of
``--screen`` px (1200 by default: a browser window on a 1920 x 1200 display).

Needs cmark-gfm, mmdc and /usr/bin/chromium (scripts/test-services.sh installs them).
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
WIDTH = 1000  # the browser window; the comment's column is 880 px inside it
_MERMAID_PRE = re.compile(r'<pre lang="mermaid"><code>(.*?)</code></pre>', re.S)


def _chart(source: str, work: Path, index: int) -> str:
    """One Mermaid block as an <img> of its SVG, or GitHub's error box when mermaid-cli rejects it."""
    config = work / "puppeteer.json"
    config.write_text(json.dumps({"executablePath": CHROMIUM, "args": ["--no-sandbox"]}))
    block, svg = work / f"chart-{index}.mmd", work / f"chart-{index}.svg"
    block.write_text(source, encoding="utf-8")
    drawn = subprocess.run(
        ["mmdc", "-q", "-p", str(config), "-i", str(block), "-o", str(svg), "-w", "760"],
        capture_output=True,
        text=True,
    )
    if drawn.returncode == 0 and svg.is_file():
        return f'<p><img src="{svg.name}" style="max-width:100%"></p>'
    error = next((line for line in drawn.stderr.splitlines() if "Error" in line), "Unable to render rich display")
    return (
        '<div style="border:1px solid #d1242f;background:#ffebe9;padding:8px 12px;border-radius:6px;'
        f'font-family:monospace;font-size:12px">Unable to render rich display<br>{html.escape(error[:300])}</div>'
    )


def to_html(markdown: str, css: str, work: Path) -> str:
    body = subprocess.run(
        ["cmark-gfm", "--unsafe", "--github-pre-lang", "-e", "table", "-e", "strikethrough", "-e", "autolink"],
        input=markdown,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    count = iter(range(1_000))
    body = _MERMAID_PRE.sub(lambda m: _chart(html.unescape(m.group(1)), work, next(count)), body)
    return (
        f'<!doctype html><meta charset="utf-8"><style>{css}\nbody{{margin:0;background:#fff}}'
        ".markdown-body{box-sizing:border-box;width:880px;padding:16px 24px;border:1px solid #d0d7de;"
        'border-radius:6px;margin:12px}</style><article class="markdown-body">'
        f"{body}</article>"
    )


def drawn_height(png: Path) -> int:
    """The comment's height in px: the last row of the screenshot that is not the page's white."""
    from PIL import Image  # matplotlib's dependency, in the report extra

    with Image.open(png) as image:
        grey = image.convert("L")
        width, height = grey.size
        rows = grey.crop((0, 0, width, height)).point(lambda v: 255 if v < 250 else 0).getbbox()
    return rows[3] if rows else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("comment", type=Path)
    parser.add_argument("png", type=Path)
    parser.add_argument("--css", type=Path, required=True)
    parser.add_argument("--height", type=int, default=0, help="The picture's height in px (default: the comment's).")
    parser.add_argument("--screen", type=int, default=1200, help="px of one screen, for the height in screens.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        page = work / "comment.html"
        page.write_text(to_html(args.comment.read_text(encoding="utf-8"), args.css.read_text(), work), encoding="utf-8")

        def shoot(height: int) -> None:
            subprocess.run(
                [
                    CHROMIUM,
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--hide-scrollbars",
                    f"--screenshot={args.png.resolve()}",
                    f"--window-size={WIDTH},{height}",
                    page.as_uri(),
                ],
                check=True,
                capture_output=True,
            )

        shoot(8000)
        tall = drawn_height(args.png) + 12  # the article's bottom margin
        shoot(args.height or tall)
    print(
        f"wrote {args.png} ({args.png.stat().st_size} bytes); the comment is {tall} px tall, "
        f"{tall / args.screen:.2f} screens of {args.screen} px"
    )


if __name__ == "__main__":
    main()
