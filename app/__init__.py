"""Hearth app layer (see DESIGN.md, "Layers")."""
