"""Hearth ui layer (see DESIGN.md, "Layers")."""
