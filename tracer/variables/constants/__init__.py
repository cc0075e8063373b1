"""Python values known at trace time: constants, symbolic numbers (SymInt and friends), slices."""
