"""Strings from a bundle, made safe for where they are shown: a terminal line, JSON, markdown.

Why: a bundle is written by a stranger. Any of its strings (a member name, a server name, a
claim label, an error text) may carry rich markup (``[green]ok[/]``), newlines and ANSI escapes
that print fake "ok signature" lines, lone surrogates that break JSON consumers, or markdown
and HTML that turn a PR comment into links, images and @mentions.

- ``one_line``: control characters (C0, DEL, C1), newlines and Unicode bidi/format characters
  become visible escapes (``\\n``, ``\\x1b``, ``\\u202e``); whitespace runs collapse to one space;
  lone surrogates become ``\\udcXX``. Printed as ``rich.text.Text`` (never parsed as markup),
  each check stays one line.
- ``json_safe``: a JSON-ready copy: strings through ``one_line``'s escaping of surrogates, non-finite
  floats as null, dict keys as strings; ``json.dumps(json_safe(x), allow_nan=False)`` cannot fail.
- ``md_field``: one bundle field for markdown that GitHub renders: markdown punctuation
  backslash-escaped, ``<``/``>``/``&`` as entities, ``@`` followed by a word character broken
  with a word joiner (U+2060, so nobody is pinged), URL schemes and ``www.`` broken the same way
  (no autolinks), and everything ``one_line`` does.
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
    text = text if isinstance(text, str) else str(text)
    if not text.isascii() or _ASCII_CONTROL.search(text):
        text = "".join(_escape_char(c) for c in text)
    text = _WHITESPACE_RUN.sub(" ", text)
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 1, 0)] + "…"
    return text


def json_safe(value: Any, *, _depth: int = 0) -> Any:
    """A copy of ``value`` that ``json.dumps(..., allow_nan=False)`` always accepts and any parser reads."""
    if _depth > 64:
        return "(nested too deeply)"
    if value is None or isinstance(value, bool) or isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8") if _has_surrogate(value) else value
    if isinstance(value, dict):
        return {json_safe(str(k)): json_safe(v, _depth=_depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v, _depth=_depth + 1) for v in value]
    return json_safe(str(value))


def _has_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in text)


_MD_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()#+!|~\-.])")
_URL_SCHEME = re.compile(r"(?i)\b(https?|ftp|mailto|file|data|javascript)(:)")
_WWW = re.compile(r"(?i)\b(www)(\.)")
_MENTION = re.compile(r"@(?=[A-Za-z0-9_])")


_PLAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+:/=-]*$")  # names, ids, key fingerprints (SHA256:...)


def md_field(text: Any, limit: int | None = 300) -> str:
    """One bundle string, inert in GitHub markdown: no markup, HTML, links, images or @mentions.

    A plain name (letters, digits and ``_.+:/=-``, no ``://`` and no ``www.``: nothing GitHub
    links or formats) is returned as it is, so server names and point ids still name files and
    match each other, and key fingerprints read as they are.
    """
    text = text if isinstance(text, str) else str(text)
    if (
        _PLAIN_NAME.match(text)
        and "://" not in text
        and "www." not in text.lower()
        and (limit is None or len(text) <= limit)
    ):
        return text
    line = one_line(text, limit)
    line = _URL_SCHEME.sub(lambda m: m.group(1) + _WORD_JOINER + m.group(2), line)
    line = _WWW.sub(lambda m: m.group(1) + _WORD_JOINER + m.group(2), line)
    line = _MENTION.sub("@" + _WORD_JOINER, line)
    line = line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_PUNCTUATION.sub(r"\\\1", line)


def md_deep(value: Any, *, _depth: int = 0) -> Any:
    """Every string (dict keys included) of a JSON-like value through ``md_field``; numbers kept."""
    if _depth > 64:
        return "(nested too deeply)"
    if isinstance(value, str):
        return md_field(value, limit=None)
    if isinstance(value, dict):
        return {
            md_field(k, limit=None) if isinstance(k, str) else k: md_deep(v, _depth=_depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [md_deep(v, _depth=_depth + 1) for v in value]
    return value
