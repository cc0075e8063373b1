"""Quickstart: compile a function with bytegraph and look at what it made.

What you will see:
  1. the FX graph bytegraph traced from the function's bytecode (printed as Python code),
  2. the guards of that cache entry and the generated guard function that checks them on every call,
  3. a call with a different string: one guard fails, so bytegraph compiles a second entry,
  4. ``bytegraph.why`` answering which entry a call would use and which guard rejected the others.

Run it with ``./run.sh example`` (or ``python examples/quickstart.py`` in a bytegraph venv).
"""

# %%
# Compile: `bytegraph.compile` wraps the function (also usable as `@bytegraph.compile`); nothing is
# traced until the first call.
import torch

import bytegraph


def reference(x, bias, act):
    y = (x + bias) * 2
    return torch.relu(y) if act == "relu" else torch.nn.functional.gelu(y)


layer = bytegraph.compile(reference)
x, bias = torch.randn(4, 8), torch.randn(8)
torch.testing.assert_close(layer(x, bias, "relu"), reference(x, bias, "relu"))

# %%
# The FX graph: tensor operations only. The string `act` was a constant while tracing: the `if`
# was decided (relu) and `act` is guarded instead of being a graph input.
entry = bytegraph.cache_entries(layer)[0]
print("===== FX graph of entry 0 =====")
print(entry.graphs[0].code.strip())

# %%
# The guards of entry 0, one assumption per line: the tensors' type/dtype/device/shape/strides and
# requires_grad, `act`'s type and value, the identity of the global `torch`, and torch's global
# state (default dtype, deterministic algorithms, autocast, grad mode).
print("\n===== guards of entry 0 =====")
print(entry.guards.source)

# %%
# Every call goes through one generated Python function that checks those guards and returns the
# entry to run (None means: trace and compile a new entry).
print("\n===== generated guard function =====")
print(bytegraph.guard_source(layer))

# %%
# Recompile: a different `act` fails `L['act'] == 'relu'`, so a second entry is compiled (with the
# gelu branch). The failing guard is recorded as the reason; the guard function now tests the
# guards both entries share once, then branches on `act`.
torch.testing.assert_close(layer(x, bias, "gelu"), reference(x, bias, "gelu"))
print("\n===== after a call with act='gelu' =====")
for e in bytegraph.cache_entries(layer):
    print(f"entry {e.index}: compiled because of: {e.reason}")
print(bytegraph.guard_source(layer))

# %%
# `why` evaluates the guards without running anything: which entry these arguments select, and the
# first guard that rejects each other entry.
print("\n===== why(x, bias, 'gelu') =====")
print(bytegraph.why(layer, x, bias, "gelu"))
print("\n===== why(x.double(), bias, 'relu') =====")
print(bytegraph.why(layer, x.double(), bias, "relu"))
