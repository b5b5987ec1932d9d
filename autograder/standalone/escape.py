"""One rule per output format for text a student controls, so that it stays inert.

Student text is anything a submission decides: exception messages, what its code printed,
answers.yaml keys and values, notebook cells, folder names. Every renderer passes such text
through the rule of its format here, and through nothing else:

- ``plain``: the terminal, logs, nbgrader's text feedback, GitHub workflow commands and JSON
  fields a platform shows as text. No control character, escape sequence (ANSI, OSC),
  bidirectional override or line separator survives (each becomes ``?``), and no ``::`` or
  ``##[`` is left to start a workflow command. ``prefixed`` gives every line of a
  multi-line text its prefix, so none reaches column 0.
- ``code_span`` / ``fenced``: Markdown. Student text goes in a code span or a fenced block
  whose backtick run is longer than any inside, so it cannot be closed from inside; inside
  a table cell, ``|`` is escaped as GFM asks. ``markdown_text`` backslash-escapes every ASCII
  punctuation character of text that is ours but may quote a name.
- ``html_text``: HTML text and attribute values.
- ``csv_cell``: a spreadsheet cell that starts with ``= + - @`` (or a tab or carriage return)
  gets a leading ``'``, so it is never read as a formula; a number (``-2``, ``+0.5``) is
  written as it is. ``csv_text`` writes whole rows, every cell through ``csv_cell``: every CSV
  the grader writes goes through it.

Hand-written, standard library only: this file is copied into each student template (see
``autograder.workflows.release``). Markdown has no escaping function in the standard library
or in the CommonMark renderers (markdown-it-py renders, it does not escape); the rules follow
the CommonMark spec (code spans, fenced code blocks, backslash escapes) and GFM's tables, and
the test suite checks them with markdown-it-py. HTML from a student notebook is sanitised with
nh3 where notebooks are handled (``autograder.platforms.nbgrader``), not here.
"""

from __future__ import annotations

import csv
import html
import io
import re
import string
from collections.abc import Iterable

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
PUNCTUATION = frozenset(string.punctuation)
NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")  # fullmatch: a cell read as a number


def plain(text: str) -> str:
    """Text safe for a terminal, a log and GitHub's workflow-command parser; newlines and
    tabs stay (``prefixed`` indents them)."""
    text = "".join(c if c.isprintable() or c in "\n\t" else "?" for c in str(text))
    while "::" in text or "##[" in text:
        text = text.replace("::", ": :").replace("##[", "# #[")
    return text


def one_line(text: str) -> str:
    """``plain`` on one line: every run of whitespace (newlines too) becomes one space."""
    return " ".join(plain(text).split())


def prefixed(prefix: str, text: str) -> list[str]:
    """Each line of ``text``, made plain, with ``prefix`` in front (an empty text still
    gives one line)."""
    return [prefix + line for line in (plain(text).splitlines() or [""])]


def longest_backtick_run(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)


def code_span(text: str, in_table: bool = False) -> str:
    """A Markdown code span no backtick inside can close; on one line, since a blank line
    would end the paragraph around it. ``in_table``: escape ``|``, which GFM reads as a
    cell border even inside a code span."""
    text = one_line(text)
    if not text:
        return ""
    if in_table:
        # an odd run of backslashes before each pipe, however a renderer counts them
        text = re.sub(r"(\\*)\|", lambda m: m[1] * 2 + "\\|", text)
    fence = "`" * (longest_backtick_run(text) + 1)
    # a space on each side keeps a backtick at either end from joining the fence (CommonMark
    # strips one space from each side again)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def fenced(text: str) -> str:
    """A Markdown fenced code block that no line of ``text`` can close early."""
    text = plain(text)
    fence = "`" * max(3, longest_backtick_run(text) + 1)
    return f"{fence}text\n{text}\n{fence}"


def markdown_text(text: str) -> str:
    """One line of Markdown that renders as exactly this text: every ASCII punctuation
    character backslash-escaped (CommonMark allows it for all of them), ``<`` and ``&``
    included, so no emphasis, link, image, HTML or table border can start."""
    return "".join("\\" + c if c in PUNCTUATION else c for c in one_line(text))


def html_text(text: str) -> str:
    """HTML text or a quoted attribute value."""
    return html.escape(plain(text), quote=True)


def csv_cell(value: object) -> str:
    """A spreadsheet cell never read as a formula (numbers are written as they are)."""
    text = str(value)
    formula = text.startswith(FORMULA_STARTS) and not NUMBER.fullmatch(text)
    return "'" + text if formula else text


def csv_text(rows: Iterable[Iterable[object]]) -> str:
    """CSV text (``\n`` line ends), every cell through ``csv_cell``."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows([csv_cell(v) for v in row] for row in rows)
    return buffer.getvalue()
