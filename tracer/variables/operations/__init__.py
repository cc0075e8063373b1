"""Python's operations on traced values: operators (a registry), builtins, truth/identity/
containment and ordering."""
