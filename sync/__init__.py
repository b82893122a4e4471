"""Hearth sync layer (see docs/ARCHITECTURE.md, "Layers")."""
