"""Python's cycle collector, run on the GUI thread only.

The collector runs in whichever thread happens to allocate past its threshold: in Hearth often
the Node's. When a cycle it frees holds a Qt object that Python owns (a window, a dialog), the
C++ object is destroyed on that thread, which Qt does not allow (widgets belong to the GUI
thread) and which can deadlock the interpreter against Qt's own locks. So while the window is
up, automatic collection is off and a timer on the GUI thread collects, generation by
generation, at the thresholds Python itself would use.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

CHECK_MS = 500  # how often the GUI thread looks at the allocation counts


class GuiThreadCollector(QObject):
    """Turns automatic collection off for as long as it runs; `stop()` turns it back on."""

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._was_enabled = gc.isenabled()
        self._thresholds = gc.get_threshold()
        gc.disable()
        self._timer = QTimer(self, interval=CHECK_MS)
        self._timer.timeout.connect(self.check)
        self._timer.start()

    def check(self) -> int:
        """Collect the oldest generation whose count passed its threshold (objects freed)."""
        counts = gc.get_count()
        for generation in (2, 1, 0):
            if counts[generation] > self._thresholds[generation]:
                return gc.collect(generation)
        return 0

    def stop(self) -> None:
        """Collect once more here, then give collection back to Python (idempotent)."""
        if not self._timer.isActive():
            return
        self._timer.stop()
        gc.collect()
        if self._was_enabled:
            gc.enable()
