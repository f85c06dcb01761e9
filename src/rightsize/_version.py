"""The package version, in the bottom layer so any package may read it."""

__version__ = "0.1.0"
