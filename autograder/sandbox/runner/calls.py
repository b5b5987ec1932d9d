"""Which of the student's own functions ran during one request.

The grader blames a failure on another function of the student's ("fix X first") only when
the failing function really called X. So every function and method the student's module
defines is wrapped, once after import, to note its name in a set the worker empties before
each request and sends back with the reply. Standard library only: this file is copied into
each job.
"""

import contextlib
import functools


def record(module, called):
    """Wrap the functions and methods defined in ``module`` to add their names to ``called``
    ("padding_mask", "KVCache.append") each time they run."""

    def recording(function, name):
        @functools.wraps(function)
        def recorded(*args, **kwargs):
            called.add(name)
            return function(*args, **kwargs)

        return recorded

    def own(value):
        is_function = type(value).__name__ == "function"
        return is_function and getattr(value, "__module__", None) == module.__name__

    for name, value in list(vars(module).items()):
        if own(value):
            setattr(module, name, recording(value, name))
        elif isinstance(value, type) and value.__module__ == module.__name__:
            for attr, method in list(vars(value).items()):
                if own(method):
                    # a class that refuses new attributes keeps its own methods
                    with contextlib.suppress(AttributeError, TypeError):
                        setattr(value, attr, recording(method, f"{name}.{attr}"))
