"""Normalisation of a checked query to DNF branches (docs/semantics.md section 6)."""
