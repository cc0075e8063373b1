"""Graph breaks: what bytegraph does when it meets code it cannot put in a graph.

You will see:
1. the seeds' example ``b = a + 2; print("Hi"); return b + a``: two graphs and one break;
2. the rewritten bytecode of ``fn`` (call the first graph, rebuild the locals, run ``print`` in
   Python, call the resume function) and the resume function itself;
3. a data-dependent branch, which picks one of two resume functions at run time;
4. ``bytegraph.explain``'s report with each break's reason, source line and hint.
"""

# %%
import dis

import torch
from bytegraph.backends.debug import CompileCounter

import bytegraph

counter = CompileCounter()


@bytegraph.compile(backend=counter)
def fn(a):
    b = a + 2
    print("Hi")
    return b + a


x = torch.randn(4)
torch.testing.assert_close(fn(x), (x + 2) + x)
print(f"graphs compiled: {counter.frame_count}")  # 2: before and after the print

# %% The rewritten fn: graph, locals, the print itself, then the resume function
entry = bytegraph.cache_entries(fn)[0]
dis.dis(entry.fn)

# %% The resume function continues at the instruction after the print
for resume in bytegraph.state_of(fn).resumes.values():
    print(f"--- {resume.__name__}")
    dis.dis(resume.__wrapped__)


# %% A data-dependent branch: the jump runs in Python and chooses a resume function
@bytegraph.compile(backend=counter)
def clipped(x):
    y = x * 2
    if y.sum() > 0:
        return y - 1
    return -y


for sign in (1.0, -1.0):
    t = torch.full((3,), sign)
    torch.testing.assert_close(clipped(t), clipped.__wrapped__(t))
print(f"graphs compiled so far: {counter.frame_count}")


# %% explain: one report per call, with every break's reason and how to avoid it
def several_breaks(x):
    y = x.sin()
    print("step")
    z = y.cos().sum().tolist()
    if y.sum() > 0:
        y = y + z
    return y


print(bytegraph.explain(several_breaks)(torch.randn(5)))
