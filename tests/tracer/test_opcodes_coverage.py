"""Opcode registry coverage (STYLE §9.4) and one differential test per opcode family, each first
asserting that the opcode really occurs in the function's code (STYLE §9.5).

PYTEST_DONT_REWRITE: the traced functions here must keep CPython's own ``assert`` bytecode.
"""

from __future__ import annotations

import dis
import types

import pytest
import torch
from bytegraph.codegen.pyversion import VERSION
from bytegraph.tracer import opcodes
from difftest import check


def python(first: tuple[int, int], last: tuple[int, int] = (3, 13)) -> pytest.MarkDecorator:
    """Skip outside Python ``first``..``last``, where the opcode (or the form tested) exists."""
    span = ".".join(map(str, first)) + ("" if first == last else "-" + ".".join(map(str, last)))
    return pytest.mark.skipif(
        not first <= VERSION <= last, reason=f"opcode exists only on Python {span}"
    )


only_311 = python((3, 11), (3, 11))
until_312 = python((3, 11), (3, 12))
since_312 = python((3, 12))
only_313 = python((3, 13))

COUNTER = 0


class Holder:
    value = 0


def opnames(fn) -> set[str]:
    """Opcode names of ``fn`` and of every code object nested in it (comprehensions, lambdas)."""
    names: set[str] = set()
    todo = [fn.__code__]
    while todo:
        code = todo.pop()
        names.update(inst.opname for inst in dis.get_instructions(code))
        todo.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return names


def test_every_opcode_is_handled_or_explained():
    known = set(opcodes.HANDLERS) | set(opcodes.UNSUPPORTED)
    missing = sorted(n for n in dis.opmap if n not in known)
    assert missing == []


def test_no_opcode_is_both_handled_and_unsupported():
    assert set(opcodes.HANDLERS) & set(opcodes.UNSUPPORTED) == set()


def test_unsupported_opcodes_give_reasons():
    assert all(isinstance(r, str) and len(r) > 10 for r in opcodes.UNSUPPORTED.values())


def test_handlers_are_named_after_their_first_opcode():
    for name, fn in opcodes.HANDLERS.items():
        assert fn.__name__.isidentifier() and fn.__name__ == fn.__name__.lower(), name


def _slice_load(xs):
    return xs[1:3][0] + xs[-1]


def _slice_store(x):
    xs = [x, x, x, x]
    xs[1:3] = [x * 2]
    return xs


def _comprehension(x):
    i = 3
    return [x * i for i in range(2)], x + i


def _unary_positive(x):
    return +x


def _list_to_tuple(x, rest):
    return (x * 2, *rest)


def _return_const(x):
    x.add(1)


def _method_call(x):
    return x.mul(2).sum()


def _keyword_call(x):
    return x.sum(dim=0, keepdim=True)


def _and_or(x, a, b):
    return x * (a and b) + (a or b)


def _jump_if_none(x, y):
    if y is None:
        return x + 1
    return x


def _generator(x):
    return tuple(t * 2 for t in (x, x + 1))


def _store_global(x):
    global COUNTER
    COUNTER = 5
    return x * COUNTER


def _store_attr(x, h):
    h.value = 3
    return x + h.value


def _cells(x):
    k = 2

    def inner():
        return x * k

    return inner()


def _store_deref(x):
    k = 1

    def bump():
        nonlocal k
        k = k + 1

    bump()
    return x * k


def _unpack_ex(xs):
    a, *b = xs
    return a + b[0]


def _call_function_ex(x):
    args, kwargs = (x,), {"dim": 0}
    return torch.sum(*args, **kwargs)


def _format(x, name):
    return {f"{name}:{x.shape[0]:>3}": x + 1}


def _build_set_and_dicts(x):
    s = {*[1, 2], 3}
    d = {**{"a": 1}, "b": 2}
    return x * len(s) + d["b"]


def _const_key_map(x):
    d = {"a": x, "b": x * 2}
    return d["b"]


def _del(x):
    y = x + 1
    xs = [x, y]
    del xs[0]
    del y
    return xs


def _contains_is(x, n):
    return x * ((n in (1, 2)) + (n is not None))


def _with_no_grad(x):
    with torch.no_grad():
        return x * 2


def _swap_copy(a, b):
    a, b = b, a
    return a - b


def _chained(x, n):
    return x * (0 < n < 10)


def _unpack(pair):
    a, b = pair
    return a * b


def _attr(x):
    return x.T + x.ndim


def _unary(x, n):
    return -x, ~(x > 0), x * (not n)


def _for_iter(xs):
    out = 0
    for t in xs:
        out = out + t
    return out


def _binary_subscr(x, d):
    return x[0] + d["k"]


def _store_subscr(x):
    y = x.clone()
    y[0] = 1.0
    return y


def _assert(x):
    assert x.ndim == 1
    return x + 1


def _set_and_map_add(x):
    s = {i % 2 for i in range(4)}
    d = {i: x * i for i in range(2)}
    return d[1] * len(s)


def _build_slice(x):
    return x[::2]


def _compare(x, n):
    return x * (n < 3)


def _format_conversion(x, name):
    return {f"{name!r}-{name!s:>4}-{x.shape!a}": x + 1}


def _defaults(x):
    def inner(a, b=2, *, c=3):
        return a * b + c

    return inner(x), inner(x, 3, c=x)


def _cell_argument(x):
    def inner():
        return x * 2

    return inner()


def _if_tensor_free(x, n, items):
    if n and items:
        return x + 1
    return x - 1


CASES = [
    # (opcode, fn, args, marks)
    pytest.param(
        "BINARY_SLICE",
        _slice_load,
        ([torch.randn(2) for _ in range(4)],),
        marks=since_312,
        id="BINARY_SLICE",
    ),
    pytest.param("STORE_SLICE", _slice_store, (torch.randn(2),), marks=since_312, id="STORE_SLICE"),
    pytest.param(
        "LOAD_FAST_AND_CLEAR",
        _comprehension,
        (torch.randn(2),),
        marks=since_312,
        id="LOAD_FAST_AND_CLEAR",
    ),
    pytest.param(
        "CALL_INTRINSIC_1",
        _unary_positive,
        (torch.randn(2),),
        marks=since_312,
        id="CALL_INTRINSIC_1-positive",
    ),
    pytest.param(
        "CALL_INTRINSIC_1",
        _list_to_tuple,
        (torch.randn(2), [torch.randn(2)]),
        marks=since_312,
        id="CALL_INTRINSIC_1-list_to_tuple",
    ),
    pytest.param(
        "RETURN_CONST", _return_const, (torch.randn(2),), marks=since_312, id="RETURN_CONST"
    ),
    pytest.param(
        "END_FOR", _for_iter, ([torch.randn(2), torch.randn(2)],), marks=since_312, id="END_FOR"
    ),
    pytest.param("LOAD_METHOD", _method_call, (torch.randn(2),), marks=only_311, id="LOAD_METHOD"),
    pytest.param("PRECALL", _method_call, (torch.randn(2),), marks=only_311, id="PRECALL"),
    pytest.param(
        "UNARY_POSITIVE", _unary_positive, (torch.randn(2),), marks=only_311, id="UNARY_POSITIVE"
    ),
    pytest.param(
        "LIST_TO_TUPLE",
        _list_to_tuple,
        (torch.randn(2), [torch.randn(2)]),
        marks=only_311,
        id="LIST_TO_TUPLE",
    ),
    pytest.param(
        "JUMP_IF_FALSE_OR_POP",
        _and_or,
        (torch.randn(2), 2, 3),
        marks=only_311,
        id="JUMP_IF_FALSE_OR_POP",
    ),
    pytest.param(
        "JUMP_IF_TRUE_OR_POP",
        _and_or,
        (torch.randn(2), 0, 3),
        marks=only_311,
        id="JUMP_IF_TRUE_OR_POP",
    ),
    pytest.param(
        "POP_JUMP_FORWARD_IF_NOT_NONE",
        _jump_if_none,
        (torch.randn(2), None),
        marks=only_311,
        id="POP_JUMP_FORWARD_IF_NOT_NONE",
    ),
    pytest.param(
        "POP_JUMP_IF_NOT_NONE",
        _jump_if_none,
        (torch.randn(2), None),
        marks=since_312,
        id="POP_JUMP_IF_NOT_NONE",
    ),
    pytest.param("KW_NAMES", _keyword_call, (torch.randn(3, 2),), marks=until_312, id="KW_NAMES"),
    pytest.param("CALL_KW", _keyword_call, (torch.randn(3, 2),), marks=only_313, id="CALL_KW"),
    pytest.param(
        "TO_BOOL", _if_tensor_free, (torch.randn(2), 2, [1]), marks=only_313, id="TO_BOOL"
    ),
    pytest.param(
        "LOAD_FAST_LOAD_FAST",
        _swap_copy,
        (torch.randn(2), torch.randn(2)),
        marks=only_313,
        id="LOAD_FAST_LOAD_FAST",
    ),
    pytest.param(
        "STORE_FAST_STORE_FAST",
        _swap_copy,
        (torch.randn(2), torch.randn(2)),
        marks=only_313,
        id="STORE_FAST_STORE_FAST",
    ),
    pytest.param(
        "STORE_FAST_LOAD_FAST",
        _comprehension,
        (torch.randn(2),),
        marks=only_313,
        id="STORE_FAST_LOAD_FAST",
    ),
    pytest.param(
        "SET_FUNCTION_ATTRIBUTE",
        _defaults,
        (torch.randn(2),),
        marks=only_313,
        id="SET_FUNCTION_ATTRIBUTE-defaults",
    ),
    pytest.param(
        "SET_FUNCTION_ATTRIBUTE",
        _cell_argument,
        (torch.randn(2),),
        marks=only_313,
        id="SET_FUNCTION_ATTRIBUTE-closure",
    ),
    pytest.param(
        "CONVERT_VALUE",
        _format_conversion,
        (torch.randn(3), "n"),
        marks=only_313,
        id="CONVERT_VALUE",
    ),
    pytest.param(
        "FORMAT_SIMPLE", _format, (torch.randn(3), "n"), marks=only_313, id="FORMAT_SIMPLE"
    ),
    pytest.param(
        "FORMAT_WITH_SPEC", _format, (torch.randn(3), "n"), marks=only_313, id="FORMAT_WITH_SPEC"
    ),
    pytest.param("CALL", _method_call, (torch.randn(2),), id="CALL"),
    pytest.param("LOAD_ATTR", _attr, (torch.randn(2, 2),), id="LOAD_ATTR"),
    pytest.param("YIELD_VALUE", _generator, (torch.randn(2),), id="YIELD_VALUE"),
    pytest.param("RETURN_GENERATOR", _generator, (torch.randn(2),), id="RETURN_GENERATOR"),
    pytest.param("STORE_GLOBAL", _store_global, (torch.randn(2),), id="STORE_GLOBAL"),
    pytest.param("STORE_ATTR", _store_attr, (torch.randn(2), Holder()), id="STORE_ATTR"),
    pytest.param("MAKE_CELL", _cells, (torch.randn(2),), id="MAKE_CELL"),
    pytest.param("LOAD_CLOSURE", _cells, (torch.randn(2),), marks=until_312, id="LOAD_CLOSURE"),
    pytest.param("MAKE_FUNCTION", _defaults, (torch.randn(2),), id="MAKE_FUNCTION-defaults"),
    pytest.param("MAKE_FUNCTION", _cell_argument, (torch.randn(2),), id="MAKE_FUNCTION-cell_arg"),
    pytest.param("COPY_FREE_VARS", _cells, (torch.randn(2),), id="COPY_FREE_VARS"),
    pytest.param("LOAD_DEREF", _cells, (torch.randn(2),), id="LOAD_DEREF"),
    pytest.param("STORE_DEREF", _store_deref, (torch.randn(2),), id="STORE_DEREF"),
    pytest.param("MAKE_FUNCTION", _cells, (torch.randn(2),), id="MAKE_FUNCTION"),
    pytest.param("UNPACK_EX", _unpack_ex, ([torch.randn(2), torch.randn(2)],), id="UNPACK_EX"),
    pytest.param(
        "UNPACK_SEQUENCE", _unpack, ((torch.randn(2), torch.randn(2)),), id="UNPACK_SEQUENCE"
    ),
    pytest.param("CALL_FUNCTION_EX", _call_function_ex, (torch.randn(3),), id="CALL_FUNCTION_EX"),
    pytest.param("DICT_MERGE", _call_function_ex, (torch.randn(3),), id="DICT_MERGE"),
    pytest.param(
        "FORMAT_VALUE", _format, (torch.randn(3), "n"), marks=until_312, id="FORMAT_VALUE"
    ),
    pytest.param(
        "FORMAT_VALUE",
        _format_conversion,
        (torch.randn(3), "n"),
        marks=until_312,
        id="FORMAT_VALUE-conversion",
    ),
    pytest.param("BUILD_STRING", _format, (torch.randn(3), "n"), id="BUILD_STRING"),
    pytest.param("SET_UPDATE", _build_set_and_dicts, (torch.randn(2),), id="SET_UPDATE"),
    pytest.param("DICT_UPDATE", _build_set_and_dicts, (torch.randn(2),), id="DICT_UPDATE"),
    pytest.param("BUILD_MAP", _build_set_and_dicts, (torch.randn(2),), id="BUILD_MAP"),
    pytest.param(
        "BUILD_CONST_KEY_MAP", _const_key_map, (torch.randn(2),), id="BUILD_CONST_KEY_MAP"
    ),
    pytest.param(
        "LIST_EXTEND", _list_to_tuple, (torch.randn(2), [torch.randn(2)]), id="LIST_EXTEND"
    ),
    pytest.param("DELETE_SUBSCR", _del, (torch.randn(2),), id="DELETE_SUBSCR"),
    pytest.param("DELETE_FAST", _del, (torch.randn(2),), id="DELETE_FAST"),
    pytest.param("CONTAINS_OP", _contains_is, (torch.randn(2), 2), id="CONTAINS_OP"),
    pytest.param("IS_OP", _contains_is, (torch.randn(2), 2), id="IS_OP"),
    pytest.param(
        "BEFORE_WITH", _with_no_grad, (torch.randn(2, requires_grad=True),), id="BEFORE_WITH"
    ),
    pytest.param("SWAP", _chained, (torch.randn(2), 3), id="SWAP"),
    pytest.param("COPY", _chained, (torch.randn(2), 3), id="COPY"),
    pytest.param("UNARY_NEGATIVE", _unary, (torch.randn(2), 0), id="UNARY_NEGATIVE"),
    pytest.param("UNARY_INVERT", _unary, (torch.randn(2), 0), id="UNARY_INVERT"),
    pytest.param("UNARY_NOT", _unary, (torch.randn(2), 0), id="UNARY_NOT"),
    pytest.param("GET_ITER", _for_iter, ([torch.randn(2), torch.randn(2)],), id="GET_ITER"),
    pytest.param("FOR_ITER", _for_iter, ([torch.randn(2), torch.randn(2)],), id="FOR_ITER"),
    pytest.param("BINARY_SUBSCR", _binary_subscr, (torch.randn(2), {"k": 1.0}), id="BINARY_SUBSCR"),
    pytest.param("STORE_SUBSCR", _store_subscr, (torch.randn(2),), id="STORE_SUBSCR"),
    pytest.param("LOAD_ASSERTION_ERROR", _assert, (torch.randn(2),), id="LOAD_ASSERTION_ERROR"),
    pytest.param("SET_ADD", _set_and_map_add, (torch.randn(2),), id="SET_ADD"),
    pytest.param("MAP_ADD", _set_and_map_add, (torch.randn(2),), id="MAP_ADD"),
    pytest.param("LIST_APPEND", _comprehension, (torch.randn(2),), id="LIST_APPEND"),
    pytest.param("BUILD_SLICE", _build_slice, (torch.randn(4),), id="BUILD_SLICE"),
    pytest.param("COMPARE_OP", _compare, (torch.randn(2), 1), id="COMPARE_OP"),
    pytest.param("BINARY_OP", _compare, (torch.randn(2), 1), id="BINARY_OP"),
]


@pytest.mark.parametrize(("opname", "fn", "args"), CASES)
def test_opcode_is_traced(opname, fn, args):
    assert opname in opnames(fn), f"{opname} does not occur in {fn.__name__}"
    assert opname in opcodes.HANDLERS
    check(fn, *args)
