"""Markdown as GitHub renders it: Debian's cmark-gfm with the table, strikethrough and autolink
extensions (the ones GitHub turns on for comments), HTML out.

Missing cmark-gfm skips the test on a developer's machine; where scripts/test.sh installed it
(BYOG_REQUIRE_CMARK=1) a missing one fails it.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

EXTENSIONS = ("table", "strikethrough", "autolink")

# Every form cmark-gfm's autolink extension (extensions/autolink.c) links, and the characters it
# accepts before one: a letter or digit before the scheme, "_" (also "\_" in the source), non-ASCII.
LINK_FORMS = (
    "a1https://evil.example/x",
    "_https://evil.example",
    "_www.evil.example",
    "éhttps://evil.example",
    "9ftp://evil.example",
    "x@.evil.example",
    "mailto:u@evil.example",
    "xmpp:u@evil.example/r",
    "a.b-c_d@evil.example",
    "(www.evil.example)",
    "*www.evil.example*",
    "HTTPS://EVIL.EXAMPLE",
    "中https://evil.example",
)


def render_gfm(markdown: str) -> str:
    tool = shutil.which("cmark-gfm")
    if tool is None:
        message = "cmark-gfm is not installed (apt-get install cmark-gfm)"
        if os.environ.get("BYOG_REQUIRE_CMARK") == "1":
            pytest.fail(message)
        pytest.skip(message)
    # --unsafe: keep raw HTML (<details>, <summary>) as GitHub does; its sanitizer, not cmark, filters tags.
    argv = [tool, "--unsafe", *(arg for ext in EXTENSIONS for arg in ("-e", ext))]
    return subprocess.run(argv, input=markdown, capture_output=True, text=True, check=True, timeout=30).stdout
