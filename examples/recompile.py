"""Recompiles: when bytegraph traces a function again, why, and how to keep it from happening.

What you will see:
  1. the same call twice: one cache entry, no recompile,
  2. a new dtype, a new shape and a new Python string: each fails one guard and adds one entry,
     with the failing guard printed by the ``recompiles`` log and kept as the entry's ``reason``,
  3. ``bytegraph.why`` for a call that would compile again,
  4. the recompile limit: past ``bytegraph.config.recompile_limit`` entries the function runs
     eagerly for new inputs, with one warning naming the guard that keeps failing.
"""

# %%
# Setup: print each recompile with the guard that failed (the `recompiles` log artifact).
import warnings

import torch

import bytegraph

bytegraph.set_logs("recompiles")


def f(x, mode):
    return torch.sin(x) if mode == "sin" else torch.cos(x)


compiled = bytegraph.compile(f)


def call(x, mode):
    out = compiled(x, mode)
    torch.testing.assert_close(out, f(x, mode))  # compiled results always equal eager ones


# %%
# Same inputs (fresh tensors with the same metadata): the guards pass, the entry is reused.
call(torch.randn(3), "sin")
call(torch.randn(3), "sin")
print(f"after two identical calls: {len(bytegraph.cache_entries(compiled))} entry", flush=True)

# %%
# Each of these changes one thing the trace assumed, so exactly one guard fails and one entry is
# added. The reason recorded is the first failing guard of every existing entry.
call(torch.randn(3, dtype=torch.float64), "sin")  # dtype
call(torch.randn(5), "sin")  # shape
call(torch.randn(3), "cos")  # strings are specialised: a new value is a new entry
for e in bytegraph.cache_entries(compiled):
    print(f"entry {e.index}: {e.reason}", flush=True)

# %%
# `why` explains a call before it happens: here every entry rejects these arguments.
print("\nwhy(compiled, torch.randn(3), 'tan'):")
print(bytegraph.why(compiled, torch.randn(3), "tan"))

# %%
# The recompile limit: a function that sees a new constant on every call would compile forever.
# After `recompile_limit` entries new inputs run eagerly (still correct), with one warning.
bytegraph.set_logs("")
bytegraph.config.recompile_limit = 4
limited = bytegraph.compile(lambda x, name: torch.cos(x) + len(name))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for n in range(10):
        x, name = torch.randn(2), f"run_{n}"
        torch.testing.assert_close(limited(x, name), torch.cos(x) + len(name))
print(f"\n{len(bytegraph.cache_entries(limited))} entries, {len(caught)} warning:")
print(caught[0].message)
print("\nTip: pass values that vary on every call as tensors, not as Python constants.")
