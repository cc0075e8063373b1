"""Functions and methods: user functions (inlined), builtins and torch callables, closure cells,
``functools`` caches, functions marked for the tracer, and calls that make classes."""
