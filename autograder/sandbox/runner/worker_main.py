"""The untrusted side: import the student's module and run the calls the grader asks for.

Usage: python -I -S worker_main.py SUBMISSION_DIR MODULE CAPTURE_FILE [NUMPY_SITE_DIR]

The grader talks to this process over its stdin/stdout. Those two descriptors are moved
aside at start, so what the student prints goes to CAPTURE_FILE instead, and is handed back
(capped) with every reply. ``sys.stdout`` and ``sys.stderr`` keep only the first OUTPUT_CAP
characters of each call and count the rest, so a flood of prints costs neither disk nor
memory; writes straight to the descriptors land in the file, which RLIMIT_FSIZE caps.
Nothing that runs here can change a score: replies are plain data that the grader checks.
"""

import io
import linecache
import os
import sys
import time
import traceback
import tracemalloc

RUNNER = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, RUNNER)


def confine(path):
    """Resource limits, then death with the grader: first thing, before NumPy is imported
    or any student code runs (the grader writes them, see Sandbox.worker_limits)."""
    import ctypes
    import json
    import resource
    import signal

    with open(path) as f:
        spec = json.load(f)
    for name, (soft, hard) in spec["rlimits"].items():
        resource.setrlimit(getattr(resource, name), (soft, hard))
    ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if spec["grader"] is not None and os.getppid() != spec["grader"]:
        os._exit(1)  # the grader died before the line above: nobody to answer


if os.path.exists(os.path.join(RUNNER, "limits.json")):
    confine(os.path.join(RUNNER, "limits.json"))
# Started with -S: no site module (a fifth of the start-up, and no .pth hooks of the grader's
# environment). NumPy's folder comes last on the command line.
sys.path += sys.argv[4:5]
import calls  # noqa: E402
import landlock  # noqa: E402
import wire  # noqa: E402

OUTPUT_CAP = 4096


class Capped(io.TextIOBase):
    """A text stream onto a descriptor that keeps the first OUTPUT_CAP characters per call."""

    kept = 0  # shared by stdout and stderr, which write to the same file
    dropped = 0

    def __init__(self, fd, name):
        super().__init__()
        self.fd = fd
        self.stream_name = name

    @property
    def name(self):
        return self.stream_name

    def writable(self):
        return True

    def isatty(self):
        return False

    def fileno(self):
        return self.fd

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        room = max(OUTPUT_CAP - Capped.kept, 0)
        if room:
            os.write(self.fd, s[:room].encode("utf-8", "replace"))
        Capped.kept += min(len(s), room)
        Capped.dropped += max(len(s) - room, 0)
        return len(s)


def take_output(path):
    """Return what the student printed since the last call (capped) and start afresh."""
    try:
        with open(path, "rb") as f:
            text = f.read(OUTPUT_CAP + 1)
        size = os.path.getsize(path)
        os.truncate(path, 0)  # stdout is in append mode, so writing goes on from 0
    except OSError:
        return ""
    out = text[:OUTPUT_CAP].decode("utf-8", "replace")
    cut = max(size - OUTPUT_CAP, 0) + Capped.dropped
    Capped.kept = Capped.dropped = 0
    if cut:
        out += f"\n... (another {cut} bytes or characters of output were cut)"
    return out


def describe(error, submission):
    """An exception as plain text: its type names, message and the student's own line."""
    try:
        message = str(error)[:2000]
    except Exception:
        message = "(the exception's message could not be shown)"
    where, line, shapes = None, "", {}
    if isinstance(error, SyntaxError) and error.filename:
        where = [os.path.basename(error.filename), error.lineno or 0, "<module>"]
    else:
        for frame, lineno in traceback.walk_tb(error.__traceback__):
            if frame.f_code.co_filename.startswith(submission):
                code = frame.f_code
                where = [os.path.basename(code.co_filename), lineno or 0, code.co_name]
                line = linecache.getline(code.co_filename, lineno).strip()[:300]
                shapes = array_shapes(frame.f_locals)
    names = [cls.__name__ for cls in type(error).__mro__][:20]
    return {
        "type": names[0],
        "mro": names,
        "message": message,
        "where": where,
        "line": line,
        "shapes": shapes,
    }


def array_shapes(names):
    """The shapes of the arrays among a frame's local names, so that a shape error can be
    told in the student's terms (which array had which shape on the line that failed)."""
    import numpy as np  # loaded already, by wire

    found = {}
    for name, value in list(names.items())[:200]:
        if isinstance(value, np.ndarray) and isinstance(name, str) and len(found) < 30:
            found[name[:50]] = [int(n) for n in value.shape[:8]]
    return found


def perform(module, header, args, kwargs, objects, out_blobs):
    """One request: call a function of the module, or, on an object the grader holds
    (``target``), call a method, read an attribute (``get``) or set one (``set``)."""
    name = header["call"]
    target = module if header.get("target") is None else objects.get(header["target"])
    op = header.get("op", "call")
    if op == "tests":  # the student's own tests in this module, by name
        found = [n for n, f in vars(module).items() if n.startswith("test_") and callable(f)]
        return {"result": wire.encode(sorted(found), out_blobs)}
    if op == "set":
        setattr(target, name, args[0])
        return {"result": wire.encode(None, out_blobs)}
    found = getattr(target, name, None) if target is module else getattr(target, name)
    if op == "get":
        if callable(found):
            return {"result": {"t": "json", "v": None}, "callable": True}
        return {"result": wire.encode(found, out_blobs, objects)}
    if not callable(found):
        return {"missing": True}
    if not header.get("measure"):
        return {"result": wire.encode(found(*args, **kwargs), out_blobs, objects)}
    tracemalloc.start()  # the peak memory the call itself allocates, its result included
    try:
        value = found(*args, **kwargs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return {"result": wire.encode(value, out_blobs, objects), "peak_bytes": peak}


def main():
    submission, module_name, capture = sys.argv[1], sys.argv[2], sys.argv[3]
    requests, replies = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    out = os.open(capture, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(out)
    sys.stdout = sys.__stdout__ = Capped(1, "<stdout>")  # type: ignore[misc]
    sys.stderr = sys.__stderr__ = Capped(2, "<stderr>")  # type: ignore[misc]
    sys.dont_write_bytecode = True
    os.chdir(submission)
    applied = None
    rules = os.path.join(RUNNER, "landlock.json")
    if os.path.exists(rules):  # confine before any of the student's code runs
        try:
            applied = landlock.restrict_from(rules)
        except (OSError, ValueError, KeyError) as error:
            wire.send(replies, {"ready": True, "landlock": {"error": str(error)[:500]}})
            return
    sys.path.insert(0, submission)

    module, import_error = None, None
    called: set[str] = set()  # the student's own functions and methods run by this request
    try:
        module = __import__(module_name)
        calls.record(module, called)
    except BaseException as error:  # SystemExit and KeyboardInterrupt too: report, not die
        import_error = describe(error, submission)
    ready = {"ready": True, "import_error": import_error, "output": take_output(capture)}
    wire.send(replies, dict(ready, landlock=applied))

    # the student's objects that the grader holds handles to, and the channel that the
    # objects the grader lends call back through
    objects = wire.Objects(channel=(requests, replies))
    while True:
        try:
            header, blobs = wire.receive(requests)
        except EOFError:
            return
        args = wire.decode(header["args"], blobs, objects=objects)
        kwargs = wire.decode(header["kwargs"], blobs, objects=objects)
        start = time.perf_counter()
        out_blobs = []
        called.clear()
        if module is None:
            reply = {"error": import_error, "import": True}
        else:
            try:  # even looking a name up can run student code (a __getattr__, a property)
                reply = perform(module, header, args, dict(kwargs), objects, out_blobs)
            except BaseException as error:
                out_blobs = []
                reply = {"error": describe(error, submission)}
        reply["called"] = sorted(called)
        reply["seq"] = header.get("seq", 0)
        reply["seconds"] = time.perf_counter() - start
        reply["output"] = take_output(capture)
        wire.send(replies, reply, out_blobs)


if __name__ == "__main__":
    main()
