"""Hostile inputs and resources, files changing while read."""
