"""The hypothesis strategies' vocabulary and verdict rules."""
