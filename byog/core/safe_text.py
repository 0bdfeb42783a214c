"""Strings from a bundle, made safe for where they are shown: a terminal line, JSON, markdown.

Why: a bundle is written by a stranger. Any of its strings (a member name, a server name, a
claim label, an error text) may carry rich markup (``[green]ok[/]``), newlines and ANSI escapes
that print fake "ok signature" lines, lone surrogates that break JSON consumers, or markdown
and HTML that turn a PR comment into links, images and @mentions.

One escaper per destination:

- a terminal: ``terminal_text`` (``one_line``): control characters (C0, DEL, C1), newlines and
  Unicode bidi/format characters become visible escapes (``\\n``, ``\\x1b``, ``\\u202e``), so
  an ESC sequence (clear-screen, an OSC 8 link, a colour) prints as its characters and U+202E
  reorders nothing; whitespace runs collapse to one space; lone surrogates become ``\\udcXX``.
  The CLI's console layer (``byog.cli.console_reporter``: ``say``, ``print_table``,
  ``ConsoleReporter``) takes every string through it and prints it as ``rich.text.Text`` (never
  parsed as markup), so each line stays one line.
- ``json_safe``: a JSON-ready copy: strings through ``one_line``'s escaping of surrogates, non-finite
  floats as null, dict keys as strings; ``json.dumps(json_safe(x), allow_nan=False)`` cannot fail.
- markdown: ``md_text``, ``md_code``, ``md_fence``: one bundle field as GitHub markdown text, an inline
  code span or a code block, inert: no markup, HTML, link, image, @mention or issue reference,
  and nothing that ends the span or block. Every markdown byog writes (report.md, the PR
  comment, ``byog attach``) takes bundle text through these, once, where it enters the markdown;
  ``mermaid_text`` does the same for a label inside a Mermaid chart.
- ``csv_cell``, ``csv_cell_read``: a string cell of a CSV file that a spreadsheet opens as text,
  never as a formula (``=HYPERLINK(...)`` in a bundle's error text), and back, exactly.
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Any

# Characters that move the cursor, change colours, reorder text or hide it.
_BIDI_AND_FORMAT = {
    0x061C,
    0x200B,
    0x200C,
    0x200D,
    0x200E,
    0x200F,
    0x2028,
    0x2029,
    0x2060,
    0x2061,
    0x2062,
    0x2063,
    0x2064,
    0xFEFF,
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
}
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_WHITESPACE_RUN = re.compile(r"[ \u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]{2,}")
_WORD_JOINER = "\u2060"


def _escape_char(char: str) -> str:
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    if code < 0x20 or code == 0x7F or 0x80 <= code < 0xA0:
        return f"\\x{code:02x}"
    if code < 0x7F:
        return char
    if (
        0xD800 <= code <= 0xDFFF
        or code in _BIDI_AND_FORMAT
        or unicodedata.category(char) in ("Cf", "Co", "Cs", "Zl", "Zp")
    ):
        return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
    return char


_ASCII_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def one_line(text: Any, limit: int | None = None) -> str:
    """``text`` as one printable line; cut to ``limit`` characters (with an ellipsis) when given."""
    line = text if isinstance(text, str) else str(text)
    if not line.isascii() or _ASCII_CONTROL.search(line):
        line = "".join(_escape_char(c) for c in line)
    line = _WHITESPACE_RUN.sub(" ", line)
    if limit is not None and len(line) > limit:
        line = line[: max(limit - 1, 0)] + "…"
    return line


def terminal_text(text: Any, limit: int | None = None) -> str:
    """The terminal's escaper: ``text`` as one printable line in which no character acts on the
    terminal (``one_line``); cut to ``limit`` characters when given."""
    return one_line(text, limit)


def json_safe(value: Any, *, _depth: int = 0) -> Any:
    """A copy of ``value`` that ``json.dumps(..., allow_nan=False)`` always accepts and any parser reads."""
    if _depth > 64:
        return "(nested too deeply)"
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return valid_utf8(value)
    if isinstance(value, dict):
        return {json_safe(str(k)): json_safe(v, _depth=_depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v, _depth=_depth + 1) for v in value]
    return json_safe(str(value))


def valid_utf8(text: str) -> str:
    """``text`` with its lone surrogates escaped (``\\udcXX``, as ``json_safe`` does): a string every UTF-8
    writer (CSV, parquet) accepts."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8") if _has_surrogate(text) else text


# What makes a spreadsheet read a cell as a formula (OWASP's CSV injection list), and the quote
# that marks one as text; a cell that already starts with the quote gets one more, so reading is exact.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "'")


def csv_cell(text: str) -> str:
    """A string cell for CSV: one leading ``'`` when it would start a formula (or starts with ``'``)."""
    return "'" + text if text.startswith(_FORMULA_START) else text


def csv_cell_read(text: str) -> str:
    """What ``csv_cell`` was given."""
    return text[1:] if text.startswith("'") and text[1:].startswith(_FORMULA_START) else text


def _has_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in text)


# Characters that can start markdown or HTML anywhere in a line; "|" is format.table()'s to escape
# (a table cell needs "\|", a paragraph does not, so the one who builds the table escapes it).
_MARKDOWN_SPECIAL = frozenset("\\`*_[]<>!~&#")
# GitHub links these in plain text. Its autolink extension (cmark-gfm extensions/autolink.c) links
# - ``scheme://host`` at a ':' followed by '//': it walks back over the ASCII letters before the ':'
#   (any character before those, a letter excepted, may precede: ``a1https://``, ``_https://``,
#   ``éhttps://``) and links when they end in http, https or ftp. A word joiner before every such
#   ':' leaves it no letter to walk back over.
# - ``www.`` after a space, the line's start or one of ``*_~(`` (``\_www.`` is ``_www.`` in the
#   source). A word joiner inside every ``www.``, whatever precedes it.
# - ``x@y.z`` e-mail addresses (``mailto:``/``xmpp:`` forms included): it reads forward from the
#   '@' over letters, digits, ``.-_``, and needs a letter or digit right after it. A word joiner
#   after every '@', which also keeps @user and @org/team mentions from pinging.
# - a scheme's name as a word (mailto:, javascript:, ...): a word joiner before its ':' too.
# And #123 issue references.
_SCHEME_COLON = re.compile(r"(?<=[A-Za-z]):(?=//)")
_URL_SCHEME = re.compile(r"(?i)\b(https?|ftp|mailto|file|data|javascript|vbscript|xmpp)(:)")
_WWW = re.compile(r"(?i)(www)(\.)")
_AT = re.compile("@")
_ISSUE_REF = re.compile(r"#(?=[0-9])")


_INNER_UNDERSCORE = re.compile(r"(?<=[A-Za-z0-9])_(?=[A-Za-z0-9])")


def md_text(value: Any, limit: int | None = None, *, inner_underscores: bool = False) -> str:
    """Bundle text as inert GitHub markdown text: the one escaper of everything byog writes as markdown.

    One line (``one_line``); every character that could start markup backslash-escaped (GitHub
    shows it as the character); a leading ``+``/``-`` escaped (no list item); a word joiner
    (U+2060, invisible) after every ``@``, the ``#`` of an issue reference, a URL scheme's name,
    the letters before any ``://`` and every ``www``, so nobody is pinged and nothing links: what
    cmark-gfm's autolink extension needs to make a link (see ``_SCHEME_COLON``) is never all there.
    Plain names and numbers (``cand-fp8kv``, ``decode-b8-isl128``, ``1.7x (B=8)``) come out as
    they went in.
    ``inner_underscores``: leave a ``_`` between two letters or digits as it is (GitHub never reads
    one as emphasis), for report format 2's fields that it wrote unescaped (``max_tokens_exact``).
    """
    text = one_line(" ".join(str(value).split()), limit)
    text = _SCHEME_COLON.sub(_WORD_JOINER + ":", text)
    text = _URL_SCHEME.sub(lambda m: m.group(1) + _WORD_JOINER + m.group(2), text)
    text = _WWW.sub(lambda m: m.group(1) + _WORD_JOINER + m.group(2), text)
    text = _AT.sub("@" + _WORD_JOINER, text)
    text = _ISSUE_REF.sub("#" + _WORD_JOINER, text)
    inner = {m.start() for m in _INNER_UNDERSCORE.finditer(text)} if inner_underscores else set()
    out = "".join(f"\\{ch}" if ch in _MARKDOWN_SPECIAL and i not in inner else ch for i, ch in enumerate(text))
    return f"\\{out}" if out[:1] in ("+", "-") else out


def md_cell(value: Any, limit: int | None = None) -> str:
    """Text inside a markdown table's cell: ``md_text`` (underscores inside words kept) and ``|`` escaped."""
    return md_text(value, limit, inner_underscores=True).replace("|", "\\|")


def md_code(value: Any, limit: int | None = None) -> str:
    """Bundle text as an inline code span: one line, fenced by more backticks than its longest run.

    Inside a code span GitHub renders no markup, links no URL and pings nobody; ``one_line``
    keeps bidi and control characters visible.
    """
    text = one_line(" ".join(str(value).split()), limit)
    fence = "`" * (_longest_run(text, "`") + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_fence(value: Any, info: str = "") -> list[str]:
    """Bundle text as a fenced code block (its lines, then ""): the fence is longer than any
    backtick run in the text, and the text is one line, so nothing in it can close the block."""
    text = one_line(" ".join(str(value).split()))
    fence = "`" * max(3, _longest_run(text, "`") + 1)
    return [fence + info, text, fence, ""]


FENCE_GUTTER = "│ "  # before each line of md_fence_lines: no line of report.md starts with bundle text


def md_fence_lines(value: str, info: str = "") -> list[str]:
    """Multi-line bundle text as a fenced code block (its lines, then ""): each line through ``one_line``
    (control and bidi characters visible) behind FENCE_GUTTER, the fence longer than any backtick run in
    the text, so no line can close the block; inside it nothing renders as markdown or HTML
    (``</details>`` included). The gutter keeps byog's line-based readers of its own markdown (the PR
    comment's ``## `` sections, ``byog.bundles.pr.report_sections``) from taking a line of the text for
    one byog wrote."""
    lines = [one_line(line) for line in value.splitlines()] or [""]
    fence = "`" * max(3, max(_longest_run(line, "`") for line in lines) + 1)
    return [fence + info, *(f"{FENCE_GUTTER}{line}".rstrip() for line in lines), fence, ""]


def _longest_run(text: str, char: str) -> int:
    longest = current = 0
    for ch in text:
        current = current + 1 if ch == char else 0
        longest = max(longest, current)
    return longest


_MERMAID_UNSAFE = re.compile(r"[^A-Za-z0-9 _.+=/:,()\[\]×-]")


def mermaid_text(value: Any, limit: int = 60) -> str:
    """Bundle text inside a Mermaid chart's quoted string: only letters, digits and plain punctuation
    (no quote, no markup, no HTML, no ``%%`` directive), others become "?"; cut to ``limit``."""
    text = _MERMAID_UNSAFE.sub("?", one_line(value))
    return text if len(text) <= limit else text[: max(limit - 3, 0)] + "..."
