"""nbgrader support: build a course from our sources, and grade it two ways.

- ``notebook``: the course (``nbgrader_config.py``, one notebook per assignment, the blank
  answer sheet) and the way back, from a submitted notebook to the files ``grade`` reads.
- ``kernel``: what the hidden test cells call inside nbgrader's kernel.
- ``execute``: nbgrader's Execute preprocessor, made to survive a kernel that dies or hangs.
- ``gradebook``: our sandboxed autograde, writing into nbgrader's own gradebook.

Only ``execute`` and ``gradebook`` import nbgrader; building a course does not need it.
"""
