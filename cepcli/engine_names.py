"""The engines' names, in the order help lists them, and the default one: at the base, so
that the command line lists them without importing the engines."""

ENGINE_NAMES = ("adaptive", "tree", "chain", "first-chance", "post-processing", "eager", "columnar")
DEFAULT_ENGINE = "adaptive"
