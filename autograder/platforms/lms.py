"""Grades into the LMS: Canvas's gradebook import CSV and Moodle's grade import CSV.

Canvas reads a CSV whose first columns are ``Student, ID, SIS User ID, SIS Login ID,
Section`` (its own gradebook export's header) and then one column per assignment; it matches
a row to a student by ID, SIS User ID or SIS Login ID. Moodle's CSV import takes any
identifier column (mapped in its import form; ours is ``Email address``) and then a grade
column per grade item. The roster maps each login to those identities through its columns
``name``, ``canvas_id``, ``sis_user_id``, ``sis_login_id``, ``section`` and ``email``.

A student with a grade but no identity is returned as unmatched for the caller to report,
never dropped silently. Plain csv, since both formats are a header and rows; every cell goes
through the one CSV rule (``autograder.standalone.escape.csv_text``), so a roster's name or
section is never read as a formula.
"""

from __future__ import annotations

from collections.abc import Callable

from autograder.standalone.escape import csv_text

CANVAS_HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_ID = "Email address"
# grades[assignment][login]: the grade after the policy, or None (no grade to send)
Grades = dict[str, dict[str, float | None]]
Roster = dict[str, dict[str, str]]  # login (case-folded) -> the roster row
# a format: the CSV text, and the logins the roster gives no identity for
Format = Callable[[Grades, Roster], tuple[str, list[str]]]


def cell(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def students(grades: Grades) -> list[str]:
    return sorted({login for column in grades.values() for login in column}, key=str.casefold)


def canvas(grades: Grades, roster: Roster) -> tuple[str, list[str]]:
    """The CSV text, and the logins that have no Canvas identity in the roster."""
    rows: list[list[str]] = [[*CANVAS_HEADER, *grades]]
    unmatched = []
    for login in students(grades):
        row = roster.get(login.casefold(), {})
        ids = [row.get(k, "") for k in ("canvas_id", "sis_user_id", "sis_login_id")]
        if not any(ids):
            unmatched.append(login)
            continue
        rows.append(
            [row.get("name") or login, *ids, row.get("section", "")]
            + [cell(column.get(login)) for column in grades.values()]
        )
    return csv_text(rows), unmatched


def moodle(grades: Grades, roster: Roster) -> tuple[str, list[str]]:
    """The CSV text (identified by email address), and the logins without an email."""
    rows = [[MOODLE_ID, *grades]]
    unmatched = []
    for login in students(grades):
        email = roster.get(login.casefold(), {}).get("email", "")
        if not email:
            unmatched.append(login)
            continue
        rows.append([email, *(cell(column.get(login)) for column in grades.values())])
    return csv_text(rows), unmatched


# -- direct passback to Canvas (optional: pip install canvasapi) --------------------------------

CANVAS_TOKEN = "CANVAS_API_TOKEN"


# what a student must have in the roster to be found in each LMS
NEEDS: dict[Format, str] = {canvas: "an id, sis_user_id or sis_login_id", moodle: "an email"}


def canvas_passback(
    url: str, token: str, course_id: int, assignment_id: int, grades: dict[str, float]
) -> str:
    """Post each grade (by Canvas user id) to one Canvas assignment in a single bulk update,
    through canvasapi (Canvas's maintained client); the id of the Progress Canvas returns.

    Calls GET /api/v1/courses/:course_id, GET .../assignments/:id and POST
    .../assignments/:id/submissions/update_grades with grade_data[user_id][posted_grade]."""
    from canvasapi import Canvas  # optional: only this command needs it

    course = Canvas(url, token).get_course(course_id)
    assignment = course.get_assignment(assignment_id)
    grade_data = {user: {"posted_grade": cell(value)} for user, value in grades.items()}
    progress = assignment.submissions_bulk_update(grade_data=grade_data)
    return str(getattr(progress, "id", ""))
