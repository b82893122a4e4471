"""Hearth core layer (see DESIGN.md, "Layers")."""
