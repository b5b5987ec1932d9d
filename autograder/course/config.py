"""The course's own settings: ``course.yaml`` in the course folder (beside ``reference/`` and
``assignments/``). Every key is optional; a missing file means the defaults.

Today it holds the formative round's rate limit (``formative.results_per_day``), the time zone
its day is counted in, and the term, outside which scheduled rounds do nothing.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml

from autograder.errors import UsageError

CONFIG = "course.yaml"
DEFAULT_PER_DAY = 3


@dataclass(frozen=True)
class Formative:
    results_per_day: int = DEFAULT_PER_DAY
    timezone: str = "UTC"
    term_start: datetime.date | None = None
    term_end: datetime.date | None = None

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def in_term(self, now: datetime.datetime) -> bool:
        today = now.astimezone(self.zone).date()
        after_start = self.term_start is None or today >= self.term_start
        return after_start and (self.term_end is None or today <= self.term_end)


def load_formative(root: Path) -> Formative:
    """The formative settings of the course in ``root``; a clear error for a bad value."""
    path = Path(root) / CONFIG
    if not path.is_file():
        return Formative()
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as error:
        raise UsageError(f"{path} is not valid YAML: {str(error).splitlines()[0]}") from None
    given: Any = (data.get("formative") or {}) if isinstance(data, dict) else None
    if not isinstance(given, dict):
        raise UsageError(f"{path}: `formative` must be a mapping of settings")
    unknown = set(given) - {"results_per_day", "timezone", "term_start", "term_end"}
    if unknown:
        raise UsageError(f"{path}: unknown formative setting(s): {', '.join(sorted(unknown))}")
    per_day = given.get("results_per_day", DEFAULT_PER_DAY)
    if not isinstance(per_day, int) or isinstance(per_day, bool) or per_day < 1:
        raise UsageError(f"{path}: formative.results_per_day must be a whole number >= 1")
    timezone = str(given.get("timezone", "UTC"))
    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise UsageError(f"{path}: formative.timezone {timezone!r} is not a time zone") from None
    dates = {key: given.get(key) for key in ("term_start", "term_end")}
    for key, value in dates.items():
        if value is not None and not isinstance(value, datetime.date):
            raise UsageError(f"{path}: formative.{key} must be a date (YYYY-MM-DD)")
    return Formative(per_day, timezone, dates["term_start"], dates["term_end"])
