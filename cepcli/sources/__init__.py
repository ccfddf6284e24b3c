"""Event sources: they read rows, type them, drop what no variable can use, and
hand ``Event`` objects to a runtime."""
