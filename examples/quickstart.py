"""Quickstart: compile a function with bytegraph and look at what it made.

What you will see:
  1. the FX graph bytegraph traced from the function's bytecode (printed as Python code),
  2. the guards of that cache entry and the generated guard function that checks them on every call,
  3. a call with a different integer: one guard fails, so bytegraph compiles a second entry,
  4. ``bytegraph.why`` answering which entry a call would use and which guard rejected the others.

Run it with ``./run.sh example`` (or ``python examples/quickstart.py`` in a bytegraph venv).
"""

# %%
# Compile: `@bytegraph.compile` wraps the function; nothing is traced until the first call.
import torch

import bytegraph


@bytegraph.compile
def scaled_gelu(x, bias, scale):
    y = torch.nn.functional.gelu(x + bias)
    return y * scale


x, bias = torch.randn(4, 8), torch.randn(8)
out = scaled_gelu(x, bias, 2)
torch.testing.assert_close(out, torch.nn.functional.gelu(x + bias) * 2)

# %%
# The FX graph: tensor operations only. The int `scale` was a constant while tracing, so it is baked
# into the graph (`mul` by 2) and guarded instead of being a graph input.
entry = bytegraph.cache_entries(scaled_gelu)[0]
print("===== FX graph of entry 0 =====")
print(entry.graphs[0].code.strip())

# %%
# The guards of entry 0, one assumption per line: the tensors' type/dtype/device/shape/strides and
# requires_grad, `scale`'s type and value, the identity of the global `torch`, and torch's global
# state (default dtype, deterministic algorithms, autocast, grad mode).
print("\n===== guards of entry 0 =====")
print(entry.guards.source)

# %%
# Every call goes through one generated Python function that checks those guards and returns the
# entry to run (None means: trace and compile a new entry).
print("\n===== generated guard function =====")
print(bytegraph.guard_source(scaled_gelu))

# %%
# Recompile: a different `scale` fails `L['scale'] == 2`, so a second entry is compiled. The failing
# guard is recorded as the reason; the guard function now tests the shared guards once and then
# branches on `scale`.
out = scaled_gelu(x, bias, 3)
torch.testing.assert_close(out, torch.nn.functional.gelu(x + bias) * 3)
print("\n===== after a call with scale=3 =====")
for e in bytegraph.cache_entries(scaled_gelu):
    print(f"entry {e.index}: compiled because of: {e.reason}")
print(bytegraph.guard_source(scaled_gelu))

# %%
# `why` evaluates the guards without running anything: which entry these arguments select, and the
# first guard that rejects each other entry.
print("\n===== why(x, bias, 3) =====")
print(bytegraph.why(scaled_gelu, x, bias, 3))
print("\n===== why(x.double(), bias, 2) =====")
print(bytegraph.why(scaled_gelu, x.double(), bias, 2))
