"""Adapters from the one canonical ``Result`` to each platform's format, one module per format.

- ``gradescope``: results.json, and the bundle Gradescope runs (``export gradescope``);
- ``classroom50``: Classroom 50's result.json, and its bundle (``export classroom50``);
- ``github``: the runner result classroom-resources' reporter reads, the job summary, step
  outputs. Standard library only: it is copied verbatim into each student template;
- ``bundle``: what the Gradescope and Classroom 50 bundles share (the grader, found by path).

None of them grades: they only translate.
"""
