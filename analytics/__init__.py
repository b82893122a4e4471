"""Hearth analytics layer (see DESIGN.md, "Layers")."""
