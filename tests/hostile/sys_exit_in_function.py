"""sys.exit inside one function."""

import sys


def causal_mask(n):
    sys.exit(0)
