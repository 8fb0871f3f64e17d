"""Differential tests against other implementations installed for real."""
