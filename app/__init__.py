"""Hearth app layer (see docs/ARCHITECTURE.md, "Layers")."""
