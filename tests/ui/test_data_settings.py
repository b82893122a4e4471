"""Settings > Your data, in the window over a real Node: "Import from Slack…" with progress
brings a Slack export in (the channels show in the sidebar), "Back up now" writes a backup that
restores, the daily backup writes into its folder once the passphrase is given, and "Save an
archive" writes one."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from pathlib import Path  # noqa: E402

from PySide6.QtCore import Qt  # noqa: E402

from app.backup import daily_setting, restore  # noqa: E402
from app.workspace import Workspace  # noqa: E402
from tests.app import slack_fixture as fx  # noqa: E402
from tests.ui.support import WAIT_MS, result  # noqa: E402
from ui.data_settings import DataPage  # noqa: E402


def _page(window) -> DataPage:
    dialog = window.show_settings()
    titles = [dialog.pages.tabText(i) for i in range(dialog.pages.count())]
    assert "Your data" in titles
    page = dialog.pages.widget(titles.index("Your data"))
    assert isinstance(page, DataPage)
    return page


def _channels(window) -> set[str]:
    model = window.channel_list.model()
    return {str(model.data(model.index(i, 0), Qt.ItemDataRole.DisplayRole))
            for i in range(model.rowCount())}


def test_importing_from_slack_shows_progress_and_the_channels(qtbot, window, ada_node,
                                                              tmp_path: Path):
    page = _page(window)
    moves: list[tuple[int, int]] = []
    dialog = page.import_slack(fx.write_zip(tmp_path / "export.zip"))
    dialog.progress.moved.connect(lambda done, total: moves.append((done, total)))
    with qtbot.waitSignal(dialog.finishedImport, timeout=WAIT_MS) as finished:
        pass
    assert finished.args[0].startswith("imported 18 messages")
    # every message counted, in this window (the last count may come after the summary)
    qtbot.waitUntil(lambda: bool(moves) and moves[-1] == (18, 18), timeout=WAIT_MS)
    assert dialog.bar.value() == dialog.bar.maximum()
    assert "Imported 18 messages" in dialog.label.text()
    qtbot.waitUntil(lambda: any("general" in name for name in _channels(window)),
                    timeout=WAIT_MS)
    shown = result(ada_node.facade.run(lambda ws: [m.nick for m in ws.read("random")]))
    assert shown == ["bob (from Slack)"]


def test_back_up_now_daily_backups_and_an_archive(qtbot, window, ada_node, tmp_path: Path):
    page = _page(window)
    out = tmp_path / "now.zip"
    attached = tmp_path / "notes.bin"
    attached.write_bytes(os.urandom(300_000))
    result(ada_node.facade.run(lambda ws: ws.create_channel("notes", public=True)))
    mid = result(ada_node.facade.attach("notes", [attached]))
    with qtbot.waitSignal(page.done, timeout=WAIT_MS) as done:
        page.back_up(out, "pass phrase")
        assert page.status.text() == f"Backing up to {out}…"
    assert done.args[0].startswith(f"backed up to {out}")
    assert "of files (3 chunks)" in done.args[0], done.args[0]  # the file's 2 and its list
    restored = restore(out, tmp_path / "restored", "pass phrase")
    with Workspace.open(restored.paths) as ws:
        assert ws.key == ada_node.key
        assert ws.files.open(mid, 0).read_bytes() == attached.read_bytes()

    folder = tmp_path / "daily"
    folder.mkdir()
    with qtbot.waitSignal(page.done, timeout=WAIT_MS) as done:
        page.set_daily(folder, "pass phrase")
    said, _, where = done.args[0].partition(" to ")
    written = Path(where)
    assert said == "daily backup written" and page.status.text() == done.args[0]
    assert written.parent == folder and written.name.startswith("hearth-default-")
    assert daily_setting(ada_node.paths.data).last_ms > 0
    assert "the last:" in page.daily_label.text()
    page.daily.check()  # not due again for a day: nothing more is written
    assert len(list(folder.iterdir())) == 1
    page.set_daily(None)
    assert page.daily_label.text() == "No daily backup."

    site = tmp_path / "site"
    with qtbot.waitSignal(page.done, timeout=WAIT_MS) as done:
        page.archive(site, "html", False)
    assert "as html" in done.args[0] and (site / "index.html").exists()
