"""The trackers: one module per family of values (see docs/architecture.md).

Layered bottom up, each module importing only those below it: ``base`` (the tracker protocol),
``call_rules`` and ``dispatch`` (the rule tables), then ``constants``, ``tensors``, ``containers``,
``live_inputs``, ``iterators``, ``functions``, ``objects``, ``frames`` (frames of the
inline stack), ``modules``, ``contexts``,
``distributed``, ``numpy_arrays``, ``torch_calls``, ``subgraphs``, ``pytree`` (torch's pytree
helpers), ``operations`` (the general rules of the protocol) and ``builder`` (real values into
trackers).
"""
