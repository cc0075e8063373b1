"""``tracer/entry.py``: the entry every call of a compiled function goes through. Where its
guards are short it tests them in its own code (no call of the guard function) and picks what
the guard function would: variants added, dropped and cleared, arguments named like the guards'
own names, calls from several threads while variants are added."""

from __future__ import annotations

import gc
import sys
import threading
import warnings

import torch
from bytegraph.tracer import entry

import bytegraph


def _frames_of_a_call(fn, *args):
    names = []

    def profile(frame, event, arg):
        if event == "call":
            names.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        fn(*args)
    finally:
        sys.setprofile(None)
    return names


def _scaled(x, k):
    return x * k + 1


def _check(compiled, fn, *args):
    out, expected = compiled(*args), fn(*args)
    torch.testing.assert_close(out, expected)
    assert out.dtype == expected.dtype and out.shape == expected.shape


def test_a_call_that_hits_tests_its_guards_in_the_entry():
    compiled = bytegraph.compile(_scaled, backend="eager")
    x = torch.randn(3)
    for _ in range(2):
        _check(compiled, _scaled, x, 2)
    frames = _frames_of_a_call(compiled, x, 2)
    assert not [name for name in frames if name.startswith("__guard_")], frames
    assert bytegraph.introspect.guard_source(compiled).startswith("def __guard__scaled_")


def test_variants_added_and_cleared_are_chosen_as_the_guards_choose():
    compiled = bytegraph.compile(_scaled, backend="eager")
    inputs = [
        (torch.randn(3), 2),
        (torch.randn(3, dtype=torch.float64), 2),
        (torch.randn(2, 2), 3),
        (torch.randn(3), 2.5),
        (torch.arange(3), 2),
    ]
    for _ in range(3):
        for args in inputs:
            _check(compiled, _scaled, *args)
    bytegraph.reset()  # the cache cleared: the entry asks the (missing) guards, then compiles
    for _ in range(2):
        for args in inputs[::-1]:
            _check(compiled, _scaled, *args)
    assert not [n for n in _frames_of_a_call(compiled, *inputs[0]) if n.startswith("__guard_")]


def _apply(m, x):
    return m(x) * 2


def test_an_entry_whose_variant_died_chooses_among_the_rest():
    compiled = bytegraph.compile(_apply, backend="eager")
    x = torch.randn(4)
    first, second = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)
    for m in (first, second, first):
        _check(compiled, _apply, m, x)
    del m, first
    gc.collect()
    _check(compiled, _apply, second, x)
    _check(compiled, _apply, torch.nn.Linear(4, 4), x)
    _check(compiled, _apply, second, x)


def _uses_g(G, x, L=2):  # noqa: N803 (named as the guards' scope)
    return x + G * L


def test_arguments_named_as_the_guards_scope_are_read_right():
    compiled = bytegraph.compile(_uses_g, backend="eager")
    x = torch.randn(3)
    for g in (1, 2, 1, 3.5):
        _check(compiled, _uses_g, g, x)
        _check(compiled, _uses_g, g, x, 3)


def test_threads_calling_while_variants_are_added_get_eagers_results():
    compiled = bytegraph.compile(_scaled, backend="eager")
    errors = []

    def calls(dtype):
        for i in range(20):
            x, k = torch.ones(3, dtype=dtype), i % 3 + 1
            out = compiled(x, k)
            if out.dtype != dtype or not torch.equal(out, _scaled(x, k)):
                errors.append((dtype, i))

    threads = [threading.Thread(target=calls, args=(d,)) for d in (torch.float32, torch.int64)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors


#: guard bodies as ``_renamed`` meets them, and texts it leaves to ``tokenize``: names in strings,
#: after a ``.`` (also across spaces and a line), beside numbers and string prefixes
_TEXTS = [
    "    if (type(C['k'].cell_contents) is ___float and ___k == 1.5e-3):\n"
    "        return ___variant_0\n    return None",
    "if ___a.___a and '___a' == \"___a\" and b'___a' and rb'___a' and (___a .\n ___a):",
    "x = (1.0, .5, 1., 0x1f, 1e5, 1_0j, ___a[1:2], ___a(...), ..., ___a, 1 .real, ___a.real)",
    "(___r := G['sys']) is ___a and ___a_not == ___a1 and ___aa != x.___a_",
    "'___a' # ___a\n___a",  # a comment
    "'\\n___a' == ___a and ___a \\\n + 1",  # an escape, a continued line
    "f'{___a}' == ___a",  # 3.12's tokenize cuts an f-string into parts
    "'''___a\n''' == ___a and \"\"\"x\"\"\"",
    "ünï == ___a and ___a.ünï and ___aü",
]


def test_renamed_names_the_tokens_tokenize_finds():
    names = {"___a": "___a__g1", "___r": "___r__g1", "ünï": "u__g1"}
    for text in _TEXTS:
        assert entry._renamed(text, names) == entry._renamed_by_tokenize(text, names), text
    renamed = entry._renamed(_TEXTS[0], {"___float": "___float__g2", "___variant_0": "v__g2"})
    assert "is ___float__g2 " in renamed and "return v__g2\n" in renamed and "C['k']" in renamed


def _closure(k):
    def fn(x):
        return x * k + 1

    return fn


def test_entries_of_closures_alike_each_have_their_own_code():
    """Closures made again and again take the same guards into the same entry text, compiled
    once: each entry still runs a code object of its own (torch.compile keys what it makes per
    code object and puts the names that code reads into the entry's globals)."""
    x = torch.randn(3)
    entries = [bytegraph.compile(_closure(2.0), backend="eager") for _ in range(3)]
    for compiled in entries:
        _check(compiled, _closure(2.0), x)
        _check(compiled, _closure(2.0), x)
    codes = [compiled.__code__ for compiled in entries]
    assert len({id(code) for code in codes}) == 3
    assert codes[0] == codes[1] == codes[2]  # the same text
    assert "___graph_0__g1" in codes[0].co_names  # the guards tested in the entry's own code


def _graph_only(x, y):
    return (x + y) * 2


def _graph_or_break(x):
    if x.dtype == torch.float32:
        return x + 1
    sys.stdout.write("")
    return x * 2


def test_a_variant_that_only_calls_its_graph_is_spared_its_frame():
    """A variant whose code is only ``return graph(*parameters)[0]``: the entry calls the graph
    itself (the variant's frame is a call's cost, and does nothing)."""
    compiled = bytegraph.compile(_graph_only, backend="eager")
    x, y = torch.randn(3), torch.randn(3)
    for _ in range(2):
        _check(compiled, _graph_only, x, y)
    frames = _frames_of_a_call(compiled, x, y)
    assert "_graph_only" not in frames and "forward" in frames, frames


def test_graph_only_variants_beside_others_are_chosen_as_the_guards_choose():
    """Variants that only call their graph and a variant with a break, in one cache, each run
    for its inputs, alternately, with no recompile; a graph that a guard's failure turns down is
    never called."""
    compiled = bytegraph.compile(_graph_or_break, backend="eager")
    inputs = [torch.randn(3), torch.arange(3), torch.randn(2, 2), torch.randn(3).double()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            for x in inputs:
                _check(compiled, _graph_or_break, x)
        variants = len(bytegraph.cache_entries(compiled))
        for _ in range(3):
            for x in inputs[::-1]:
                _check(compiled, _graph_or_break, x)
    assert len(bytegraph.cache_entries(compiled)) == variants
    assert "___f" in compiled.__code__.co_varnames


def _raises_in_graph(x, i):
    return torch.index_select(x, 0, i) + 1


def test_an_error_in_a_graph_called_by_the_entry_is_eagers():
    """An error the graph raises reaches the caller as eager's does (not taken for a failing
    guard)."""
    compiled = bytegraph.compile(_raises_in_graph, backend="eager")
    x = torch.randn(3)
    for _ in range(2):
        _check(compiled, _raises_in_graph, x, torch.tensor([1]))
    kinds = []
    for fn in (_raises_in_graph, compiled):
        try:
            fn(x, torch.tensor([7]))
        except Exception as error:  # noqa: BLE001 (compared below)
            kinds.append(type(error))
    assert len(kinds) == 2 and kinds[0] is kinds[1], kinds
    assert "___f" in compiled.__code__.co_varnames  # the graph was called by the entry
