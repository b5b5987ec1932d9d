"""A long sleep at the top level of the module."""

import time

time.sleep(3600)
