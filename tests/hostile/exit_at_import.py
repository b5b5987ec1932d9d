"""sys.exit at import: the module never finishes importing."""

import sys

sys.exit(3)
