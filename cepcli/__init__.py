"""cepcli: complex event processing with lazy chain automata, on the command line."""

__version__ = "0.1.0.dev0"
