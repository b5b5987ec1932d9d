"""nbgrader's Execute preprocessor, made to finish every notebook it starts.

Stock nbgrader gives up on a student when the kernel dies (``os._exit``, a segfault) and,
after a timeout, keeps feeding cells to a kernel still stuck in a loop that ignores the
interrupt: the grade stays NULL, or every later cell times out. Here the cell that killed or
hung the kernel gets an error output (so it is scored 0 if it is a test cell), a fresh kernel
is started, and execution goes on with the next cell. Our test cells grade the notebook file,
not the kernel's state, so nothing is lost by the restart.
"""

from __future__ import annotations

from typing import Any

from jupyter_core.utils import run_sync
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat import NotebookNode
from nbgrader.preprocessors import Execute
from traitlets import Integer


def error_output(name: str, text: str) -> NotebookNode:
    return NotebookNode(output_type="error", ename=name, evalue=text, traceback=[f"{name}: {text}"])


class KeepGoing(Execute):
    student_cell_timeout = Integer(
        20,
        help="Seconds for a cell that is not a test cell: the student's cells only define "
        "functions, so a loop there costs this, not the test cells' longer timeout.",
    ).tag(config=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.timeout_func = self.cell_timeout

    def cell_timeout(self, cell: NotebookNode) -> int | None:
        is_test = cell.get("metadata", {}).get("nbgrader", {}).get("grade", False)
        return self.timeout if is_test else self.student_cell_timeout

    async def _restart(self) -> None:
        assert self.km is not None and self.kc is not None
        await self.km.restart_kernel(now=True)
        await self.kc.wait_for_ready(timeout=self.startup_timeout)

    def preprocess_cell(self, cell: NotebookNode, resources: Any, index: int) -> Any:
        try:
            return super().preprocess_cell(cell, resources, index)
        except (DeadKernelError, CellTimeoutError) as error:
            # Dead, or still busy after the interrupt (a loop that ignores SIGINT).
            what = "died" if isinstance(error, DeadKernelError) else "did not stop after a timeout"
            self.log.warning("The kernel %s in cell %d; restarting it for the rest", what, index)
            if not any(o.output_type == "error" for o in cell.outputs):
                cell.outputs.append(error_output(type(error).__name__, f"the kernel {what}"))
            run_sync(self._restart)()
            return cell, self.resources
