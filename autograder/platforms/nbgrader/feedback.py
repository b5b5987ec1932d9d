"""What nbgrader's ``generate_feedback`` runs over each graded notebook before it writes HTML.

The feedback page is opened by the student and by the TAs, so nothing a student's notebook
brings may render there as HTML: plain ``nbgrader autograde`` copies the student's Markdown
and raw cells, and the outputs their code displayed, into the graded notebook.
``StudentTextAsText`` shows every Markdown or raw cell that is not ours as plain text
(``notebook.shown_as_text``), and the course's config then runs nbconvert's own
``SanitizeHTML`` (bleach) over every cell and output that is left.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

from autograder.platforms.nbgrader.notebook import our_texts, shown_as_text


def source_texts(resources: dict[str, Any]) -> set[str]:
    """Our Markdown cells' texts, from the source notebook (nbgrader converts from the
    course's root); none when it cannot be read, so that every text cell shows as text."""
    ids = resources.get("nbgrader", {})
    path = Path("source") / str(ids.get("assignment", "")) / f"{ids.get('notebook', '')}.ipynb"
    try:
        return our_texts(json.loads(path.read_text()))
    except (OSError, ValueError):
        return set()


class StudentTextAsText(Preprocessor):
    # nbgrader registers its preprocessors without enabling them: on by default
    enabled = Bool(True).tag(config=True)

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        ours = source_texts(resources)
        nb.cells = [
            c if c.cell_type == "code" else nbformat.from_dict(shown_as_text(c, ours))
            for c in nb.cells
        ]
        return nb, resources
