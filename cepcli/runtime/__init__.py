"""Runtimes: they execute automata over events and count their work."""
