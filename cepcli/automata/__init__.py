"""Builders: they turn a normalised pattern into an automaton, which is plain data."""
