"""An export folder is read as it is, never through symbolic links: a zip unpacked with a link
named like an uploaded file (`__uploads/F1/plan.pdf` -> ~/.ssh/id_rsa) must not make the
import attach the importer's own file to a channel everyone reads."""

from __future__ import annotations

import zipfile
from pathlib import Path

from app.workspace import Workspace
from tests.support import create_workspace

from . import slack_fixture as fx
from .conftest import Hearth


def test_a_linked_file_in_an_export_folder_is_never_read(hearth: Hearth, tmp_path: Path):
    data = create_workspace(tmp_path, "w", "ada-h")
    secret = tmp_path / "id_rsa"
    secret.write_bytes(b"-----BEGIN OPENSSH PRIVATE KEY----- not for the channel")
    folder = tmp_path / "export"
    with zipfile.ZipFile(fx.write_zip(tmp_path / "e.zip")) as zf:
        zf.extractall(folder)
    (folder / "__uploads" / "F1").mkdir(parents=True)
    (folder / "__uploads" / "F1" / "plan.pdf").symlink_to(secret)

    line = hearth("import-slack", folder, "--quiet", data=data.data).line
    assert line.startswith("imported 18 messages") and "attached" not in line
    with Workspace.open(data) as ws:
        (plan,) = [m for m in ws.read("general", limit=100) if m.text.startswith("the plan")]
        assert plan.files == ()  # a link to Slack's copy instead
        assert "files.slack.com/F1/plan.pdf" in plan.text
        assert list(ws.files.chunks.ids()) == []  # nothing was sealed into chunks either
