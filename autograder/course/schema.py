"""suite.yaml, quiz.yaml and course.yaml: each read against one declarative JSON Schema.

What each file may hold is written once, as data: ``autograder/schemas/<name>.schema.json``,
checked with jsonschema (the maintained validator). A file is composed into YAML nodes
(``yaml.compose``), which keep the line of every key and value, and turned into plain data
here; so the first problem in the file is told in one line naming the file, the line and the
key, e.g. ``course.yaml, line 6: unknown key 'capp' in late_policy (accept_for, cap,
penalty, per)``. PyYAML's safe loader gives no lines, and jsonschema knows no YAML: this module
is the small bridge between the two.

Scalars get YAML's types (numbers, booleans, null), except dates and times, which stay the
text written: their readers parse them with the course's time zone, which YAML's timestamps
do not have. Keys are the text written. A schema may word its own messages: ``"x-says"`` on a
subschema replaces the generic "must be ..." of every problem found there.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from autograder import PACKAGE_DIR
from autograder.errors import UsageError

SCHEMAS = PACKAGE_DIR / "schemas"
MAX_BYTES = 1 << 20  # a settings file, not data
MAX_DEPTH = 32  # nesting that no settings file needs (and a recursive alias would pass)
TIMESTAMP = "tag:yaml.org,2002:timestamp"
Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser where it is built
SCALARS = yaml.constructor.SafeConstructor()  # the safe loader's types for one scalar
Where = tuple[str | int, ...]  # a value's place: its keys and list indices from the top
TYPES = {
    "object": "a mapping",
    "array": "a list",
    "string": "text",
    "number": "a number",
    "integer": "a whole number",
    "boolean": "true or false",
    "null": "empty",
}


@dataclass
class Document:
    """A file's data, with the line of each value and of each mapping's key."""

    path: Path
    title: str  # what the file is, in messages ("the course file")
    error: type[Exception]
    data: Any = None
    lines: dict[Where, int] = field(default_factory=dict)
    key_lines: dict[Where, int] = field(default_factory=dict)

    def line(self, where: Where) -> int:
        return self.key_lines.get(where) or self.lines.get(where, 1)

    def fail(self, where: Where, message: str) -> Exception:
        """The one-line error for the value at ``where``."""
        return self.error(f"{self.path}, line {self.line(where)}: {message}")

    def name(self, where: Where) -> str:
        """How a message names the value at ``where``: its keys, or the file itself."""
        words = [f"item {p + 1}" if isinstance(p, int) else p for p in where]
        return ": ".join(words) if words else self.title


def read(path: Path, schema: str, error: type[Exception] = UsageError) -> Document:
    """The file at ``path``, checked against ``schema`` (``autograder/schemas/NAME.schema.json``);
    its first problem raises ``error`` in one line."""
    checker = validator(schema)
    doc = Document(Path(path), checker.schema.get("title", schema), error)
    doc.data = to_data(doc, compose(doc), ())
    problems = sorted(checker.iter_errors(doc.data), key=lambda e: order(doc, e))
    if problems:
        raise doc.fail(*said(doc, problems[0]))
    return doc


@functools.cache
def validator(schema: str) -> Any:
    data = json.loads((SCHEMAS / f"{schema}.schema.json").read_text())
    cls = jsonschema.validators.validator_for(data)
    cls.check_schema(data)
    return cls(data)


def compose(doc: Document) -> yaml.Node | None:
    try:
        text = doc.path.read_text()
    except (OSError, UnicodeDecodeError) as problem:
        why = getattr(problem, "strerror", None) or problem
        raise doc.error(f"cannot read {doc.title} {doc.path} ({why})") from None
    if len(text) > MAX_BYTES:
        raise doc.error(f"{doc.path}: over {MAX_BYTES} bytes, not {doc.title}")
    try:
        return yaml.compose(text, Loader=Loader)
    except yaml.YAMLError as problem:
        mark = getattr(problem, "problem_mark", None)
        line = mark.line + 1 if mark else 1
        raise doc.error(f"{doc.path}, line {line}: not valid YAML") from None


def to_data(doc: Document, node: yaml.Node | None, where: Where) -> Any:
    """Plain data for ``node``, noting each value's line on the way."""
    if node is None:
        return None
    doc.lines[where] = node.start_mark.line + 1
    if len(where) > MAX_DEPTH:
        raise doc.fail(where, f"{doc.name(where)} is nested too deep")
    if isinstance(node, yaml.MappingNode):
        return mapping(doc, node, where)
    if isinstance(node, yaml.SequenceNode):
        return [to_data(doc, item, (*where, i)) for i, item in enumerate(node.value)]
    make = SCALARS.yaml_constructors.get(node.tag)
    return make(SCALARS, node) if make and node.tag != TIMESTAMP else node.value


def mapping(doc: Document, node: yaml.MappingNode, where: Where) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in node.value:
        if not isinstance(key, yaml.ScalarNode):
            raise doc.fail(where, f"a key in {doc.name(where)} is not a plain word")
        name = str(key.value)
        if name in found:
            doc.key_lines[(*where, name)] = key.start_mark.line + 1
            raise doc.fail((*where, name), f"{name!r} is given twice in {doc.name(where)}")
        doc.key_lines[(*where, name)] = key.start_mark.line + 1
        found[name] = to_data(doc, value, (*where, name))
    return found


# -- jsonschema's findings, in one line each ------------------------------------------------------


def place(error: Any) -> Where:
    """Where a problem is: for an unknown key, the key itself."""
    where = tuple(error.absolute_path)
    extra = unknown_keys(error)
    return (*where, extra[0]) if extra else where


def order(doc: Document, error: Any) -> tuple[int, int]:
    """The first problem in the file first; at one line, the innermost."""
    where = place(error)
    return doc.line(where), -len(where)


def unknown_keys(error: Any) -> list[str]:
    if error.validator != "additionalProperties" or error.validator_value is not False:
        return []
    known = error.schema.get("properties", {})
    return [k for k in error.instance if k not in known]


def said(doc: Document, error: Any) -> tuple[Where, str]:
    """(where, the message) for one of jsonschema's errors."""
    where = tuple(error.absolute_path)
    what = doc.name(where)
    extra = unknown_keys(error)
    if extra:
        first = min(extra, key=lambda k: doc.line((*where, k)))
        known = ", ".join(sorted(error.schema.get("properties", {})))
        return (*where, first), f"unknown key {first!r} in {what} ({known})"
    if error.validator == "required" and "x-says" not in error.schema:
        missing = next(k for k in error.validator_value if k not in error.instance)
        return where, f"no {missing!r} in {what}"
    return where, f"{what} {error.schema.get('x-says') or must(error)}{got(error.instance)}"


def must(error: Any) -> str:
    """The generic wording of what the value must be."""
    kind, schema = error.validator, error.schema
    if kind == "type":
        wanted = error.validator_value
        wanted = wanted if isinstance(wanted, list) else [wanted]
        return "must be " + " or ".join(TYPES.get(str(w), str(w)) for w in wanted)
    if kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return bounds(schema)
    if kind == "enum":
        return "must be one of " + ", ".join(str(v) for v in error.validator_value)
    if kind in ("minLength", "minItems"):
        return "must not be empty"
    if kind == "pattern":
        return f"must match {error.validator_value}"
    return " ".join(str(error.message).split())


def bounds(schema: dict[str, Any]) -> str:
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and high is not None:
        return f"must be between {low:g} and {high:g}"
    if "exclusiveMinimum" in schema:
        return f"must be more than {schema['exclusiveMinimum']:g}"
    return f"must be at least {low:g}" if low is not None else f"must be at most {high:g}"


def got(value: Any) -> str:
    if isinstance(value, dict | list):
        return ""
    return f" (got {value!r})" if isinstance(value, str) else f" (got {value})"
