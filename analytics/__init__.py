"""Hearth analytics layer (see docs/ARCHITECTURE.md, "Layers")."""
