"""A generated conformance suite for Python semantics: builtin operations, enumerated from the
types and modules themselves, crossed with a catalogue of value kinds, each cell compared with
CPython (result, identity, exception, mutations) and its graph breaks with torch.compile's.

``catalogue`` holds the value kinds and the containers built from them, ``operations`` the
enumerated operations and their argument patterns, ``cells`` the generated functions and how one
cell is run and judged, ``matrix`` the whole matrix, its table and its baselines
(``python -m tests.python_semantics.matrix`` prints the table).
"""
