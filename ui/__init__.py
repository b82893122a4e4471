"""Hearth ui layer (see docs/ARCHITECTURE.md, "Layers")."""
