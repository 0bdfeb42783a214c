"""safe_text: what a bundle string becomes on a terminal line, in JSON and in a PR comment."""

from __future__ import annotations

import json
import re

from byog.core.safe_text import json_safe, md_code, md_fence, md_text, mermaid_text, one_line


def test_one_line_escapes_every_way_to_start_a_new_or_fake_line() -> None:
    forged = "x\n\x1b[32mok  \x1b[0m signature\r\u202eevil\u2028y\x00\x7f\x85  z\udce9"
    line = one_line(forged)
    assert (
        "\n" not in line and "\r" not in line and "\x1b" not in line and "\u202e" not in line and "\u2028" not in line
    )
    assert line == "x\\n\\x1b[32mok \\x1b[0m signature\\r\\u202eevil\\u2028y\\x00\\x7f\\x85 z\\udce9"
    assert one_line("plain text, [markup] kept as text") == "plain text, [markup] kept as text"
    assert one_line("a" * 50, 10) == "a" * 9 + "…"


def test_json_safe_is_always_strict_json() -> None:
    doc = json_safe({"a": float("nan"), "b": [float("inf"), "caf\udce9"], 3: {"c": -float("inf")}})
    text = json.dumps(doc, allow_nan=False)
    assert json.loads(text) == {"a": None, "b": [None, "caf\\udce9"], "3": {"c": None}}
    text.encode("utf-8")  # no lone surrogate left


def test_md_text_leaves_no_markup_html_link_or_mention() -> None:
    hostile = "[click](https://evil.example) ![x](http://t/p.png) <img src=x> @octocat @org/team www.evil.com #12 "
    hostile += "`code` *b*\nnew"
    safe = md_text(hostile)
    for raw in ("@octocat", "@org", "https://", "http://", "www.evil", "#12", "`code`", "\n"):
        assert raw not in safe, raw
    assert not re.search(r"(?<!\\)[<>*\[\]!`]", safe)  # every character that could start markup is escaped
    assert "@\u2060octocat" in safe and "\\[click\\]" in safe and "\\<img" in safe
    # Plain names, numbers and labels read as they are: escaping once leaves them alone.
    for plain in ("decode-b1-isl4-osl8", "SHA256:abc+/def=", "ssh-ed25519", "1.25", "decode 1.7x faster (B=8)"):
        assert md_text(plain) == plain
    assert md_text("- not a list item").startswith("\\-") and md_text("cand_tp16") == "cand\\_tp16"
    assert md_text("max_tokens_exact _x_", inner_underscores=True) == "max_tokens_exact \\_x\\_"


def test_md_code_and_md_fence_cannot_be_closed_by_their_content() -> None:
    assert md_code("a `b` c") == "``a `b` c``" and md_code("`x`") == "`` `x` ``"
    lines = md_fence("x\n```\n## Approved ````")
    assert lines == ["`````", "x ``` ## Approved ````", "`````", ""]


def test_mermaid_text_keeps_only_plain_characters() -> None:
    assert mermaid_text('a"] %%{init}%% <b>@x</b>') == "a?] ???init??? ?b??x?/b?"
    assert mermaid_text("cand-fp8kv (TP8)") == "cand-fp8kv (TP8)" and mermaid_text("x" * 50, 10) == "xxxxxxx..."
