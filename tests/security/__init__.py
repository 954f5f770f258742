"""Hostile input: archives, wheels, the explorer server, output folders (SECURITY.md)."""
