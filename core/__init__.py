"""Hearth core layer (see docs/ARCHITECTURE.md, "Layers")."""
