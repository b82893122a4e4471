"""Hearth storage layer (see DESIGN.md, "Layers")."""
