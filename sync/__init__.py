"""Hearth sync layer (see DESIGN.md, "Layers")."""
