"""The grader <-> worker protocol: length-prefixed frames of JSON plus raw ``.npy`` blobs.

This file is copied next to the worker and imported there too, so it needs only the standard
library and NumPy. Nothing here ever unpickles: arrays travel as ``.npy`` bytes and are read
back with ``allow_pickle=False`` after their header has been checked.

A frame is: 4-byte big-endian header length, the JSON header, then the blobs it lists.
Values are encoded as tagged JSON trees so that a tuple, a list, an array and a NumPy scalar
stay distinguishable (the feedback tells a student which one they returned).
"""

from __future__ import annotations

import builtins
import io
import json
import os
import struct
from typing import Any

import numpy as np

MAX_HEADER = 1 << 20  # 1 MiB of JSON
MAX_FRAME = 16 << 20  # 16 MiB of arrays in one reply
MAX_DEPTH = 8
MAX_ITEMS = 1000  # in one list or tuple
MAX_NODES = 10_000  # in one whole value
MAX_STRING = 10_000
NPY_HEADER_MAX = 1 << 16
NUMERIC_KINDS = "biufc"


class WireError(Exception):
    """A frame that breaks the protocol or its limits."""


# -- encoding ---------------------------------------------------------------------------------


def encode(value: Any, blobs: list[bytes], objects: Objects | None = None) -> dict:
    """Turn a value into a JSON-able tree; arrays are appended to ``blobs``.

    Whatever the value, the tree stays small: at most MAX_NODES nodes, MAX_FRAME bytes of
    arrays, MAX_STRING characters per string; anything past that is sent as "unsupported".
    With ``objects`` (the worker's table), any other object is kept there and sent as a
    handle, so that the grader can call its methods and read its attributes later."""
    return _encode(value, blobs, 0, [MAX_NODES], objects)


class Objects:
    """A table of objects that the other side holds by number: in the worker, a student's
    objects the grader uses ("handle"); in the grader, the objects it lends to a student's
    test ("remote").

    The worker's table also knows its ``channel`` to the grader, the (requests, replies)
    descriptors: the objects the grader lends (``Remote``) call back through it. One table is
    made per worker process and passed to what needs it; this module keeps no state."""

    LIMIT = 1000

    def __init__(self, tag: str = "handle", channel: tuple[int, int] | None = None) -> None:
        self.tag = tag
        self.table: dict[int, Any] = {}
        self.channel = channel

    def keep(self, value: Any) -> dict:
        number = next((n for n, kept in self.table.items() if kept is value), None)
        if number is None:
            if len(self.table) >= self.LIMIT:
                return {"t": "unsupported", "type": "object (too many objects)"}
            number = len(self.table) + 1
            self.table[number] = value
        return {"t": self.tag, "id": number, "type": type(value).__name__[:100]}

    def get(self, number: Any) -> Any:
        if not isinstance(number, int) or number not in self.table:
            raise WireError("unknown object handle")
        return self.table[number]


def _encode(
    value: Any, blobs: list[bytes], depth: int, nodes: list[int], objects: Objects | None
) -> dict:
    if isinstance(value, Handle | Remote):  # an object of the other side goes back to it
        return {"t": value.tag, "id": value.number, "type": value.type_name}
    nodes[0] -= 1
    if depth > MAX_DEPTH or nodes[0] < 0:
        return {"t": "unsupported", "type": "value nested too deeply or too large"}
    if isinstance(value, np.ndarray | np.generic):
        array = np.asarray(value)  # also drops ndarray subclasses
        if array.dtype.kind not in NUMERIC_KINDS or array.dtype.fields is not None:
            return {"t": "unsupported", "type": f"array of dtype {array.dtype}"}
        if array.nbytes + sum(len(b) for b in blobs) > MAX_FRAME:
            return {"t": "unsupported", "type": f"array of {array.nbytes} bytes (too large)"}
        buffer = io.BytesIO()
        # C order, shape kept: np.ascontiguousarray would make a 0-d array (a NumPy scalar
        # such as np.int64(4200)) one of shape (1,)
        np.save(buffer, array if array.flags.c_contiguous else array.copy(), allow_pickle=False)
        blobs.append(buffer.getvalue())
        tag = "scalar" if isinstance(value, np.generic) else "ndarray"
        return {"t": tag, "blob": len(blobs) - 1}
    if value is None or type(value) in (bool, int, float, str):  # exact types: no subclasses
        if type(value) is int and abs(value) > 2**63:
            return {"t": "unsupported", "type": "int too large"}
        return {"t": "json", "v": value if type(value) is not str else value[:MAX_STRING]}
    if type(value) in (tuple, list):
        items = [_encode(v, blobs, depth + 1, nodes, objects) for v in value[:MAX_ITEMS]]
        return {"t": type(value).__name__, "items": items}
    if objects is not None:
        return objects.keep(value)
    return {"t": "unsupported", "type": type(value).__name__[:100]}


def decode(
    tree: Any,
    blobs: list[bytes] | list[memoryview],
    depth: int = 0,
    objects: Objects | None = None,
) -> Any:
    """Inverse of ``encode``, defensive against a forged tree. In the worker (``objects``
    given), a handle is the object it stands for; in the grader it is a ``Handle``."""
    if depth > MAX_DEPTH or not isinstance(tree, dict):
        raise WireError("malformed value")
    tag = tree.get("t")
    if tag == "json":
        value = tree.get("v")
        if value is not None and not isinstance(value, bool | int | float | str):
            raise WireError("malformed value")
        return value
    if tag in ("ndarray", "scalar"):
        index = tree.get("blob")
        if not isinstance(index, int) or not 0 <= index < len(blobs):
            raise WireError("malformed array reference")
        array = load_npy(blobs[index])
        return array[()] if tag == "scalar" else array
    if tag in ("tuple", "list"):
        items = tree.get("items")
        if not isinstance(items, list) or len(items) > MAX_ITEMS:
            raise WireError("malformed sequence")
        decoded = [decode(item, blobs, depth + 1, objects) for item in items]
        return tuple(decoded) if tag == "tuple" else decoded
    if tag == "unsupported":
        return Unsupported(str(tree.get("type", "?"))[:200])
    if tag in ("handle", "remote"):
        number = tree.get("id")
        if not isinstance(number, int):
            raise WireError("malformed object handle")
        if objects is not None and tag == objects.tag:
            return objects.get(number)
        type_name = str(tree.get("type", "?"))[:100]
        in_worker = objects is not None and objects.tag == "handle"
        if tag == "handle" and not in_worker:
            return Handle(number, type_name)
        if tag == "remote" and in_worker:
            return Remote(number, type_name, objects)
        return Unsupported(type_name)
    raise WireError("unknown value tag")


class Unsupported:
    """Stands in for a value the worker could not send (a dict, a generator...)."""

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<a {self.type_name}>"


class Handle(Unsupported):
    """In the grader: an object that lives in the worker (an instance of a student's class).
    It is not data, so comparisons treat it as unsupported; the grader reaches it through its
    number."""

    tag = "handle"

    def __init__(self, number: int, type_name: str) -> None:
        super().__init__(type_name)
        self.number = number
        self.generation: int | None = None  # which worker process holds it (set by the grader)


# -- objects the grader lends to a student's test ---------------------------------------------

METHOD = object()  # what reading a method of a lent object gives, before it is called


class Remote:
    """In the worker: an object of the grader's, such as an instructor's implementation of a
    class that a student's test receives. Every use is a callback: the grader runs it and
    answers with plain data, so nothing of the object (its code, its module, its files)
    is ever in the worker. Calling a lent class makes an instance, which is lent too.

    ``objects`` is the worker's table, whose channel the callbacks go through; the grader
    makes one without (to send it), which cannot call back."""

    tag = "remote"

    def __init__(self, number: int, type_name: str, objects: Objects | None = None) -> None:
        object.__setattr__(self, "number", number)
        object.__setattr__(self, "type_name", type_name)
        object.__setattr__(self, "_objects", objects)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        value = callback(self._objects, "get", self, name)
        if value is not METHOD:
            return value
        return lambda *args, **kwargs: callback(self._objects, "call", self, name, args, kwargs)

    def __setattr__(self, name: str, value: Any) -> None:
        callback(self._objects, "set", self, name, (value,))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return callback(self._objects, "call", self, None, args, kwargs)

    def __len__(self) -> int:
        return callback(self._objects, "call", self, "__len__")

    def __repr__(self) -> str:
        return f"<{self.type_name}>"


def callback(
    objects: Objects | None,
    op: str,
    target: Remote,
    name: str | None,
    args: tuple = (),
    kwargs: Any = None,
) -> Any:
    """Ask the grader, over the channel of the worker's table ``objects``, to act on one of
    its objects; wait for its answer, and return it (or raise the built-in exception the
    grader's code raised)."""
    if objects is None or objects.channel is None:
        raise RuntimeError("no grader to call back")
    requests, replies = objects.channel
    blobs: list[bytes] = []
    header = {
        "callback": op,
        "target": target.number,
        "name": name,
        "args": encode(tuple(args), blobs, objects),
        "kwargs": encode(sorted((kwargs or {}).items()), blobs, objects),
    }
    send(replies, header, blobs)
    answer, answer_blobs = receive(requests)
    error = answer.get("error")
    if error:
        kind = getattr(builtins, str(error.get("type")), None)
        kind = kind if isinstance(kind, type) and issubclass(kind, Exception) else RuntimeError
        raise kind(str(error.get("message", ""))[:MAX_STRING])
    if answer.get("method"):
        return METHOD
    return decode(answer.get("result"), answer_blobs, objects=objects)


def load_npy(data: bytes | memoryview) -> np.ndarray:
    """Read ``.npy`` bytes without trusting them: check the header before allocating.

    Never unpickles: object dtypes are refused before NumPy sees the data."""
    stream = io.BytesIO(bytes(data[:NPY_HEADER_MAX]))
    try:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            read_header = np.lib.format.read_array_header_1_0
        elif version == (2, 0):
            read_header = np.lib.format.read_array_header_2_0
        else:
            raise WireError("unsupported .npy version")
        shape, fortran, dtype = read_header(stream, max_header_size=NPY_HEADER_MAX)
    except (ValueError, SyntaxError) as error:
        raise WireError(f"bad .npy header: {error}") from None
    if not all(type(n) is int and 0 <= n <= MAX_FRAME for n in shape):
        raise WireError(f"bad .npy shape {shape!r}"[:200])  # NumPy lets negative sizes through
    if dtype.kind not in NUMERIC_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise WireError(f"refused dtype {dtype}")
    count = 1
    for n in shape:
        count *= n
    offset = stream.tell()
    if count * dtype.itemsize != len(data) - offset:
        raise WireError("the .npy size does not match its header")
    flat = np.frombuffer(data, dtype=dtype, count=count, offset=offset)
    return flat.reshape(shape, order="F" if fortran else "C").copy()


# -- framing ----------------------------------------------------------------------------------


def pack(header: dict, blobs: list[bytes]) -> bytes:
    header = dict(header, blobs=[len(b) for b in blobs])
    raw = json.dumps(header).encode()
    return struct.pack(">I", len(raw)) + raw + b"".join(blobs)


def send(fd: int, header: dict, blobs: list[bytes] | None = None) -> None:
    data = memoryview(pack(header, blobs or []))
    while data:
        written = os.write(fd, data)
        data = data[written:]


def unpack_header(raw: bytes) -> tuple[dict, int]:
    """Parse a header; return it and the number of blob bytes that follow."""
    try:
        header = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise WireError("unreadable header") from None
    sizes = header.get("blobs") if isinstance(header, dict) else None
    if not isinstance(sizes, list) or not all(isinstance(n, int) and n >= 0 for n in sizes):
        raise WireError("malformed header")
    total = sum(sizes)
    if total > MAX_FRAME:
        raise WireError(f"reply of {total} bytes is over the {MAX_FRAME} byte limit")
    return header, total


def split_blobs(header: dict, body: Any) -> list:
    """Cut the body (bytes, or a memoryview: no copy) into the blobs the header lists."""
    blobs, offset = [], 0
    for size in header["blobs"]:
        blobs.append(body[offset : offset + size])
        offset += size
    return blobs


def read_exact(fd: int, n: int) -> bytes:
    """Blocking read of n bytes (used by the worker, which trusts its caller)."""
    chunks, remaining = [], n
    while remaining:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def receive(fd: int) -> tuple[dict, list[bytes]]:
    (length,) = struct.unpack(">I", read_exact(fd, 4))
    if length > MAX_HEADER:
        raise WireError("header too large")
    header, total = unpack_header(read_exact(fd, length))
    return header, split_blobs(header, read_exact(fd, total))
