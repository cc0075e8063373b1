"""Iterators and generators that behave like CPython's, real iterators reaching the trace as
inputs, and generators rebuilt at a graph break."""
