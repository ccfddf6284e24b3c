"""The query language: grammar, typed AST, printer and semantic checks."""
