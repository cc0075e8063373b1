"""Containers: CPython's list, tuple, dict and set, their methods and dict views, the
``collections`` types, dict subclasses, lazily read input lists and ``ModelOutput``."""
