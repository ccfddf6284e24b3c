"""Normalisation of a checked query to DNF branches (SPEC section 3)."""
