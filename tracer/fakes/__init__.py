"""The fake/meta subsystem: what a recorded call's result looks like, without running it.

``fake_run`` runs a call on fake tensors; ``fast_meta`` is the short way for common operators, with
bytegraph's own shape rules (``elementwise_meta``, ``static_meta``, over ``layouts``: torch's
stride rules on ints); ``static_fakes`` makes the fakes of plain static inputs and ``fake_reuse``
reuses results within a trace; ``eager_checks`` raises what eager raises and fake kernels let
through; ``shapes`` owns symbolic shapes and their guards; ``deferred_dynamo`` gives torch's fake
tensors the ``torch._dynamo`` modules they read, without Dynamo.
"""
