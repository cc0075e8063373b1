"""Every attribute of a tensor, read in a compiled function, answers ``type``, ``callable``,
``is`` and ``isinstance`` as CPython does.

The attributes are enumerated from ``torch.Tensor`` itself (``dir``), so a new torch's new
attribute is checked the day it appears. One tracker stands for most of them before they are used
(``t.relu``, ``t.nbytes``, ``t.__dict__``): a question it answers for one kind of attribute
(methods, getset descriptors, properties, class data, static and class methods) must hold for that
kind only, or the trace answers it wrong for the others.

An attribute may break the graph only where its value is state the guards do not pin
(``STATE``), or where reading it raises in eager too (``t.imag`` of a real tensor); there a break is
right, though torch.compile reads some of the first kind as constants.
"""

from __future__ import annotations

import warnings

import pytest
import torch
from difftest import without_the_plugins_recorder

import bytegraph
from bytegraph.explain import Recorder, Report

#: Attributes whose value is the tensor's own state, outside what a tensor guard checks
#: (autograd history and hooks, the version counter, the storage's address, Python-level
#: dispatch, the weak-reference list), and mutable class data: each read breaks the graph.
STATE = frozenset(
    {
        "_backward_hooks",
        "_base",
        "_cdata",
        "_grad",
        "_grad_fn",
        "grad_fn",  # of a tensor that requires grad
        "_has_grad_dtype_override",  # torch 2.15: settable per tensor
        "_has_symbolic_sizes_strides",  # False on the real tensor, True on a symbolic fake
        "_post_accumulate_grad_hooks",
        "_python_dispatch",  # True on the fake stand-in, False on the real tensor
        "_version",
        "grad_dtype",  # settable per tensor
        "names",  # named tensors are not traced
        "output_nr",
        "retains_grad",
        "__annotations__",  # a mutable dict of the class
        "__slotnames__",  # a list copyreg caches on the class once a tensor was copied
        "__static_attributes__",  # 3.13: a tuple of the class (class data that is no constant)
        "__dlpack_c_exchange_api__",  # a capsule
        "__weakref__",
        "volatile",  # deprecated: each read warns, so it runs in Python
    }
)


def _reader(name: str):
    namespace = {"torch": torch}
    exec(
        f"def read(t):\n"
        f"    a = t.{name}\n"
        f"    return t + 1, type(a), callable(a), a is t, a is None, isinstance(a, torch.Tensor)\n",
        namespace,
    )
    return namespace["read"]


def _answers(fn, t):
    try:
        return fn(t)[1:]
    except Exception as e:  # noqa: BLE001 (compared: type and message)
        return ("raised", type(e).__name__, str(e))


@pytest.mark.parametrize("requires_grad", [False, True])
def test_every_tensor_attribute_answers_as_in_cpython(requires_grad):
    inputs = [torch.randn(3, 4, requires_grad=requires_grad) for _ in range(2)]
    wrong, breaking = [], []
    # each attribute's own Recorder gives its breaks; the plugin's would keep ~750 states alive
    with warnings.catch_warnings(), without_the_plugins_recorder():
        warnings.simplefilter("ignore")  # ``t.volatile``, deprecated attributes
        for name in dir(torch.Tensor):
            fn = _reader(name)
            bytegraph.reset()
            compiled = bytegraph.compile(fn, backend="eager")
            with Recorder() as recorder:
                got = [_answers(compiled, t) for t in inputs]
            expected = [_answers(fn, t) for t in inputs]
            if got != expected:
                wrong.append(f"{name}: eager {expected[0]}, compiled {got[0]}")
            raises = expected[0][0] == "raised"
            if Report(recorder.records).graph_break_count and not (name in STATE or raises):
                breaking.append(f"{name}: {Report(recorder.records).break_reasons[0].reason}")
    bytegraph.reset()
    assert not wrong, "\n".join(wrong)
    assert not breaking, "attributes that break outside STATE:\n" + "\n".join(breaking)
