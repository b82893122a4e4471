"""Light and dark palettes, and the type size the window reads at.

The window and its delegates draw with palette roles only, so one palette switch restyles
everything. "system" follows the platform's colour scheme where Qt can tell it (light when it
cannot). The Fusion style is used everywhere: it honours palettes on every platform."""

from __future__ import annotations

import math

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication, QWidget

MIN_POINT_SIZE = 10.0  # the platform's size, but never the 9 pt some desktops default to

Role = QPalette.ColorRole
Group = QPalette.ColorGroup

_LIGHT = {
    Role.Window: "#f4f4f6", Role.WindowText: "#1d1c1d", Role.Base: "#ffffff",
    Role.AlternateBase: "#ebeaf0", Role.ToolTipBase: "#ffffff", Role.ToolTipText: "#1d1c1d",
    Role.PlaceholderText: "#6b6a70", Role.Text: "#1d1c1d", Role.Button: "#f4f4f6",
    Role.ButtonText: "#1d1c1d", Role.BrightText: "#ffffff", Role.Light: "#ffffff",
    Role.Midlight: "#e4e4e8", Role.Mid: "#c5c4cc", Role.Dark: "#9a99a2", Role.Shadow: "#55545a",
    Role.Highlight: "#2f6fd0", Role.HighlightedText: "#ffffff", Role.Link: "#1a5fb4",
    Role.LinkVisited: "#6a3fb4", Role.Accent: "#2f6fd0",
}
_DARK = {
    Role.Window: "#1f2024", Role.WindowText: "#e6e6ea", Role.Base: "#18191c",
    Role.AlternateBase: "#26272c", Role.ToolTipBase: "#2b2c31", Role.ToolTipText: "#e6e6ea",
    Role.PlaceholderText: "#9a9aa3", Role.Text: "#e6e6ea", Role.Button: "#2b2c31",
    Role.ButtonText: "#e6e6ea", Role.BrightText: "#ffffff", Role.Light: "#3a3b41",
    Role.Midlight: "#313238", Role.Mid: "#45464d", Role.Dark: "#111214", Role.Shadow: "#000000",
    Role.Highlight: "#3d7be0", Role.HighlightedText: "#ffffff", Role.Link: "#7ab0ff",
    Role.LinkVisited: "#b89cff", Role.Accent: "#3d7be0",
}


def palette(dark: bool) -> QPalette:
    """The light or dark palette; disabled text is dimmed in both."""
    colours = _DARK if dark else _LIGHT
    result = QPalette()
    for role, colour in colours.items():
        result.setColor(role, QColor(colour))
    dim = QColor(colours[Role.PlaceholderText])
    for role in (Role.Text, Role.WindowText, Role.ButtonText):
        result.setColor(Group.Disabled, role, dim)
    return result


def scaled(font: QFont, scale: float, *, bold: bool | None = None) -> QFont:
    """`font` at `scale` times its size (in points, or in pixels for a pixel-sized font),
    made bold or not when `bold` says so."""
    result = QFont(font)
    if font.pointSizeF() > 0:
        result.setPointSizeF(font.pointSizeF() * scale)
    else:
        result.setPixelSize(max(1, math.ceil(font.pixelSize() * scale)))
    if bold is not None:
        result.setBold(bold)
    return result


def system_is_dark() -> bool:
    return QGuiApplication.styleHints().colorScheme() == Qt.ColorScheme.Dark


def is_dark(appearance: str) -> bool:
    return appearance == "dark" or (appearance == "system" and system_is_dark())


def apply(app: QApplication, appearance: str = "system") -> None:
    """Style the application: Fusion, the palette for `appearance`, readable type."""
    if app.style().name().lower() != "fusion":
        app.setStyle("Fusion")
    app.setPalette(palette(is_dark(appearance)))
    _restyle(app)
    font = QFont(app.font())
    if 0 < font.pointSizeF() < MIN_POINT_SIZE:
        font.setPointSizeF(MIN_POINT_SIZE)
        app.setFont(font)



STYLE_PROPERTY = "themeStyle"


def styled(widget: QWidget, style: str) -> None:
    """Give `widget` a style sheet whose palette colours follow light and dark switches:
    `palette(...)` in a sheet is resolved once, and a widget with a sheet stops inheriting the
    application's palette, so `apply` sets each such sheet again."""
    widget.setProperty(STYLE_PROPERTY, style)
    widget.setStyleSheet(style)


def _restyle(app: QApplication) -> None:
    for widget in app.allWidgets():
        style = widget.property(STYLE_PROPERTY)
        if style:
            widget.setStyleSheet("")
            widget.setPalette(QPalette())  # inherit the new one again
            widget.setStyleSheet(style)
