"""safe_text: what a bundle string becomes on a terminal line, in JSON and in a PR comment."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

from byog.core.safe_text import (
    csv_cell,
    csv_cell_read,
    json_safe,
    md_code,
    md_fence,
    md_fence_lines,
    md_text,
    mermaid_text,
    one_line,
)
from tests.support.cmark import LINK_FORMS, render_gfm


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


def test_md_fence_lines_keeps_lines_and_cannot_be_closed_or_made_to_act() -> None:
    lines = md_fence_lines("x\n```\n## Approved ````\n</details>\n\x1b[2J\u202e", "text")
    gutter = ["│ x", "│ ```", "│ ## Approved ````", "│ </details>", "│ \\x1b[2J\\u202e"]
    assert lines == ["`````text", *gutter, "`````", ""]
    html = render_gfm("\n".join(["<details><summary>s</summary>", "", *lines, "</details>", "", "## After"]))
    assert "&lt;/details&gt;" in html and "<h2>Approved" not in html and "<h2>After</h2>" in html
    assert md_fence_lines("") == ["```", "│", "```", ""]


def test_mermaid_text_keeps_only_plain_characters() -> None:
    assert mermaid_text('a"] %%{init}%% <b>@x</b>') == "a?] ???init??? ?b??x?/b?"
    assert mermaid_text("cand-fp8kv (TP8)") == "cand-fp8kv (TP8)" and mermaid_text("x" * 50, 10) == "xxxxxxx..."


PREFIXES = ("", "a", "a1", "1", "_", "\\", "é", "中", "(", "*", "~", "-", ".", "'", '"', "x_", "[", "<", "&", "=", "/")
STARTS = ("https://", "HTTP://", "ftp://", "www.", "Www.", "mailto:u@", "xmpp:u@", "u@", "u.v+w@", "@", "u@.")
HOSTS = ("evil.example", "evil.example/p?q=1&r=(2)", "x.y", "1.2.3.4", "e-v.example/_x_")
SUFFIXES = ("", ".", ")", "_", "*", "~", "<", ";", " tail")


class _Items(HTMLParser):
    """The visible text of each <li>, and every tag name seen."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "li":
            self.items.append("")

    def handle_data(self, data: str) -> None:
        if self.items:
            self.items[-1] += data


def _rendered_items(texts: list[str]) -> _Items:
    """Each text as a list item of markdown, rendered by cmark-gfm (HTML entities resolved)."""
    parser = _Items()
    parser.feed(render_gfm("\n".join(f"- x {text}" for text in texts) + "\n"))
    return parser


def _generated_links() -> list[str]:
    return [p + s + h + x for p in PREFIXES for s in STARTS for h in HOSTS for x in SUFFIXES]


def test_github_links_none_of_the_autolink_forms_and_each_reads_as_written() -> None:
    raw = render_gfm("\n\n".join(LINK_FORMS))
    assert raw.count("<a ") == len(LINK_FORMS)  # unescaped, every one of them is a link
    rendered = _rendered_items([md_text(form) for form in LINK_FORMS])
    assert "a" not in rendered.tags and len(rendered.items) == len(LINK_FORMS)
    assert [item.replace("\u2060", "").strip() for item in rendered.items] == [f"x {form}" for form in LINK_FORMS]


def test_no_generated_string_of_prefix_scheme_host_and_separator_becomes_a_link() -> None:
    texts = _generated_links()
    raw = render_gfm("\n\n".join(texts)).count("<a ")
    assert raw > len(texts) // 2  # the generator is hostile: most of its strings link when not escaped
    rendered = _rendered_items([md_text(text) for text in texts])
    assert "a" not in rendered.tags and "img" not in rendered.tags
    visible = [item.replace("\u2060", "").strip() for item in rendered.items]
    assert visible == [f"x {' '.join(text.split())}" for text in texts]


@pytest.mark.parametrize(
    "text", ['=HYPERLINK("x")', "+1", "-5", "@SUM(A1)", "\tx", "\rx", "'", "'=x", "''", "plain", ""]
)
def test_a_csv_cell_never_starts_a_formula_and_reads_back_exactly(text: str) -> None:
    cell = csv_cell(text)
    assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell
    assert csv_cell_read(cell) == text


def test_terminal_text_shows_every_sequence_that_acts_on_a_terminal() -> None:
    from byog.core.safe_text import terminal_text

    osc8 = "\x1b]8;;https://evil.example\x07click\x1b]8;;\x07"
    assert terminal_text(osc8) == "\\x1b]8;;https://evil.example\\x07click\\x1b]8;;\\x07"
    assert terminal_text("\x1b[2J\x9b0m\u202eabc\u2066") == "\\x1b[2J\\x9b0m\\u202eabc\\u2066"
    assert terminal_text("ok\nok   signature") == "ok\\nok signature"


def test_md_cell_is_inert_inside_a_table() -> None:
    from byog.core.safe_text import md_cell

    assert md_cell("a | b </details> max_tokens") == "a \\| b \\</details\\> max_tokens"
