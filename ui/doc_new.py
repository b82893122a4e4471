"""The New document dialog: a title, who may read it (issue #15): everyone in the workspace
(the default), or only its editors (`hearth doc new --private`), and who may edit it (issue #29):
everyone in the workspace (the default), or only the people the creator adds (`--editors
only-me`; always so for a private document). The creator can change who reads it later with
"Make private" / "Make visible to the workspace" (ui/doc_sharing.py)."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QButtonGroup,
    QDialog,
    QDialogButtonBox,
    QLabel,
    QLineEdit,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

EVERYONE = "Everyone in the workspace can read it"
ONLY_EDITORS = "Only editors can read it"
ONLY_EDITORS_NOTE = ("You are its first editor; share a branch or add editors to let others "
                     "read it.")
EVERYONE_EDITS = "Everyone in the workspace"
ONLY_ADDED = "Only the people I add"


class NewDocumentDialog(QDialog):
    """Asks for a title, who may read it and who may edit it; `choice()` and `editing()` once
    accepted."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, objectName="newDocumentDialog")
        self.setWindowTitle("New document")
        self.title = QLineEdit(objectName="newDocumentTitle", placeholderText="Title")
        self.everyone = QRadioButton(EVERYONE, objectName="readableByWorkspace", checked=True)
        self.only_editors = QRadioButton(ONLY_EDITORS, objectName="readableByEditors")
        group = QButtonGroup(self)
        group.addButton(self.everyone)
        group.addButton(self.only_editors)
        note = QLabel(ONLY_EDITORS_NOTE, wordWrap=True)
        note.setEnabled(False)  # muted, in the palette's disabled text colour
        self.only_editors.toggled.connect(note.setVisible)
        note.hide()
        self.everyone_edits = QRadioButton(EVERYONE_EDITS, objectName="editableByWorkspace",
                                           checked=True)
        self.only_added = QRadioButton(ONLY_ADDED, objectName="editableByListed")
        editing = QButtonGroup(self)
        editing.addButton(self.everyone_edits)
        editing.addButton(self.only_added)
        self.only_editors.toggled.connect(self._private_toggled)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                        | QDialogButtonBox.StandardButton.Cancel)
        self.create_button = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.create_button.setText("Create")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self.title.textChanged.connect(self._title_changed)
        self._title_changed("")
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Title:"))
        layout.addWidget(self.title)
        layout.addWidget(QLabel("Who can read it:"))
        layout.addWidget(self.everyone)
        layout.addWidget(self.only_editors)
        layout.addWidget(note)
        layout.addWidget(QLabel("Who can edit it:"))
        layout.addWidget(self.everyone_edits)
        layout.addWidget(self.only_added)
        layout.addWidget(self.buttons)

    def _title_changed(self, text: str) -> None:
        self.create_button.setEnabled(bool(text.strip()))

    def _private_toggled(self, private: bool) -> None:
        # Those who may not read it may not edit it: a private document's editors are added.
        if private:
            self.only_added.setChecked(True)
        self.everyone_edits.setEnabled(not private)

    def choice(self) -> tuple[str, bool]:
        """The title (trimmed) and whether the document is private (only editors read it)."""
        return self.title.text().strip(), self.only_editors.isChecked()

    def editing(self) -> str:
        """Who edits it: "workspace" (every member) or "listed" (the people the creator adds),
        as `Documents.new(..., editing=)` takes it."""
        return "listed" if self.only_added.isChecked() or self.only_editors.isChecked() \
            else "workspace"
