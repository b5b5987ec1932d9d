"""Print fake score lines and GitHub workflow commands, and raise with one in the message."""

import sys


def causal_mask(n):
    print("Total: 100/100")
    print("Points 100/100")
    print("::notice title=Autograding::Points 100/100")
    print("::set-output name=points::100")
    print("  ::stop-commands::pwned")
    print("##[error]forged", file=sys.stderr)
    print("::add-mask::\r::error::hidden by a carriage return")
    raise ValueError("bad input\n::error::Points 100/100\n:::warning::three colons")
