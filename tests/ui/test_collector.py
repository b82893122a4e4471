"""ui.collector.GuiThreadCollector: while it runs, Python's cycle collector runs only when the
GUI thread's timer calls it (so Qt objects are never freed on a Node's thread), at the
thresholds Python would use; stopping it collects once more and gives collection back."""

from __future__ import annotations

import gc
import threading

from ui.collector import GuiThreadCollector


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_no_thread_but_the_gui_thread_collects_while_it_runs(qtbot):
    gc.enable()  # as outside the tests (tests/ui/conftest.py turns it off per test)
    collector = GuiThreadCollector()
    try:
        assert not gc.isenabled()
        freed_on: list[str] = []
        gc.callbacks.append(lambda phase, info: phase == "stop" and freed_on.append(
            threading.current_thread().name))

        def allocate() -> None:  # a Node's thread making garbage cycles, lots of them
            for _ in range(50_000):
                _Cycle()
        worker = threading.Thread(target=allocate, name="hearth-node")
        worker.start()
        worker.join()
        assert "hearth-node" not in freed_on  # nobody collected there
        assert gc.get_count()[0] > gc.get_threshold()[0]
        assert collector.check() > 0  # the timer's call, here on the GUI thread
        assert set(freed_on) == {threading.current_thread().name}
    finally:
        gc.callbacks.pop()
        collector.stop()
    assert gc.isenabled()
    collector.stop()  # again: nothing
    assert gc.isenabled()
