"""User objects: existing objects, classes and Python modules, objects made in the trace, the
attribute protocol, exceptions and weak references."""
