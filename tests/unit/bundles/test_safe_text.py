"""safe_text: what a bundle string becomes on a terminal line, in JSON and in a PR comment."""

from __future__ import annotations

import json

from byog.bundles.safe_text import json_safe, md_deep, md_field, one_line


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


def test_md_field_leaves_no_markup_html_link_or_mention() -> None:
    hostile = (
        "[click](https://evil.example) ![x](http://t/p.png) <img src=x> @octocat @org/team www.evil.com `code` "
        "| cell\nnew"
    )
    safe = md_field(hostile, limit=None)
    for raw in ("](", "<img", "@octocat", "@org", "https://", "http://", "www.evil", "`code`", " | ", "\n"):
        assert raw not in safe, raw
    assert "&lt;img" in safe and "@\u2060octocat" in safe and "\\[click\\]" in safe and "\\| cell" in safe
    # Plain names and fingerprints read as they are (and still match files and each other).
    for plain in ("candidate_tp16", "decode-b1-isl4-osl8", "SHA256:abc+/def=", "ssh-ed25519", "1.25"):
        assert md_field(plain) == plain
    assert md_deep({"server": "baseline", "note": "@here"}) == {"server": "baseline", "note": "@\u2060here"}
