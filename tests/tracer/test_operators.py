"""The operator registry (``variables/operations.py``): every operator the opcodes and the
``operator`` module reach is declared once, with its rules; and differential tests of the operators
whose handling the registry brought together (``not``, ``operator.truth``/``is_``/``contains``/
``setitem`` called directly, the reflected and in-place forms)."""

from __future__ import annotations

import operator

import pytest
import torch
from bytegraph.tracer.opcodes import arith
from bytegraph.tracer.variables import operations
from bytegraph.tracer.variables.operations import OPERATORS
from difftest import check, check_breaks, compile_counted
from dynamo_baseline import assert_no_more_breaks

import bytegraph


def test_every_operator_of_the_opcodes_is_declared_with_rules():
    reached = {
        *arith.BINARY_OPERATORS.values(),
        *arith.COMPARE_OPERATORS.values(),
        *arith.UNARY_OPERATORS.values(),
        operator.getitem,
    }
    assert reached <= set(OPERATORS)
    assert all(declared.rules for declared in OPERATORS.values())


def test_binary_operators_declare_reflected_and_in_place_forms():
    for op in operations.BINARY:
        declared = OPERATORS[op]
        stem = op.__name__.rstrip("_")
        assert declared.reflected == f"__r{stem}__"
        assert declared.dunder in (f"__{stem}__", None)
        in_place = getattr(operator, f"i{stem}")
        assert OPERATORS[in_place].kind == "inplace" and OPERATORS[in_place].binary is op
    assert {OPERATORS[op].binary for op in operations.INPLACE} == set(operations.BINARY)


def test_a_rule_registers_once_per_operator():
    rule = operations.operator_rule(operator.add)
    try:
        rule(operations.tensor_operator)
    except AssertionError:
        pass
    else:
        raise AssertionError("a rule registered twice for operator.add")


class Sized:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n


def test_not_of_constants_containers_and_objects():
    def fn(x, items, empty):
        flags = (not 0, not 3, not items, not empty, not Sized(0), not Sized(2), not None)
        return x + sum(flags), operator.not_(items), operator.not_(Sized(0))

    check(fn, torch.randn(3), [1, 2], [])
    assert_no_more_breaks(
        0,
        fn,
        torch.randn(3),
        [1, 2],
        [],
        baseline_missing="torch.compile 2.11 runs the call in Python (operator.not_)",
    )


def test_not_of_a_symbolic_size():
    def fn(x):
        return x * (not x.shape[0] - 1), operator.not_(x.shape[0])

    compiled, counter = compile_counted(fn, dynamic=True)
    sizes = [lambda n=n: (torch.randn(n),) for n in (3, 4, 1, 5)]
    check_breaks(fn, None, graphs=2, breaks=0, calls=sizes, compiled=compiled, counter=counter)
    assert_no_more_breaks(0, fn, torch.randn(3))


def test_not_of_a_tensor_breaks():
    def fn(x):
        y = x + 1
        small = not (x > 10).all()  # UNARY_NOT (TO_BOOL on 3.13): the tensor's value
        return y * small

    # torch.compile traces no graph here: it runs the frame in Python (0 graphs; on torch 2.11,
    # after other frames were compiled, its explain raises InternalTorchDynamoError instead)
    check_breaks(fn, lambda: (torch.randn(4),), graphs=2, breaks=1)


def test_operator_functions_called_directly():
    def fn(x, d):
        operator.setitem(d, "b", x * 2)
        found = operator.contains(d, "b"), operator.contains([1, 2], 3)
        same = operator.is_(d, d), operator.is_not(None, d), operator.truth(d)
        return d["b"] + sum(found) + sum(same)

    check_breaks(fn, lambda: (torch.randn(3), {"a": 1}), graphs=1, breaks=0)
    assert_no_more_breaks(0, fn, torch.randn(3), {"a": 1})


class Registry:
    """A mapping whose item deletion is written in Python."""

    def __init__(self):
        self.items = {"a": 1, "b": 2}

    def __delitem__(self, key):
        del self.items[key]


def test_item_deletion_by_operator_delitem_and_by_del():
    def fn(x, d, xs, registry):
        operator.delitem(d, "a")
        operator.delitem(xs, slice(0, 2))
        del xs[0]
        operator.delitem(registry, "a")
        del registry["b"]
        try:
            operator.delitem(d, "missing")
        except KeyError as e:
            missing = e.args
        return x + len(d) + len(xs), d, xs, registry.items, missing

    def args():
        return torch.randn(3), {"a": 1, "b": 2}, [1, 2, 3, 4], Registry()

    check_breaks(fn, args, graphs=1, breaks=0)


def test_operator_index_of_a_container_raises_cpythons_type_error():
    def fn(x, xs, d):
        errors = []
        for value in (xs, d, {1}, [x]):
            try:
                operator.index(value)
            except TypeError as e:
                errors.append(str(e))
        return x + 1, errors

    check_breaks(fn, lambda: (torch.randn(3), [1, 2], {"a": 1}), graphs=1, breaks=0)


def test_operator_call_and_calling_what_is_not_callable():
    def fn(x, obj, xs):
        results = [
            operator.call(max, 1, 3),
            operator.call(dict, a=1),
            operator.call(Registry).items,
        ]
        for value in (True, 2.5, xs, {"a": 1}, (1,), {1}, x, obj):
            try:
                operator.call(value)
            except TypeError as e:
                results.append(str(e))
            try:
                value(1)
            except TypeError as e:
                results.append(str(e))
        return x + 1, results

    check_breaks(fn, lambda: (torch.randn(3), Registry(), [1]), graphs=1, breaks=0)


class Scaled:
    def __init__(self, k):
        self.k = k

    def __radd__(self, other):
        return other + self.k

    def __rlshift__(self, other):
        return other * self.k

    def __mul__(self, other):
        return other * self.k


def test_reflected_forms_of_user_objects():
    def fn(x):
        s = Scaled(3)
        return x * (1 + s) * (2 << Scaled(2)) * (s * 2)

    check(fn, torch.randn(3))
    assert_no_more_breaks(0, fn, torch.randn(3))


def test_in_place_operators_on_lists_and_numbers():
    def fn(x, items):
        items += [x]
        items *= 2
        n = 3
        n **= 2
        n -= 1
        return len(items), n * x

    check_breaks(fn, lambda: (torch.randn(2), [1]), graphs=1, breaks=0)
    assert_no_more_breaks(
        0,
        fn,
        torch.randn(2),
        [1],
        baseline_missing="torch.compile 2.11 runs the call in Python (an in-place list operator)",
    )


class Total:
    def __init__(self, total=0):
        self.total = total

    def __add__(self, other):
        return Total(self.total + other)

    def __iadd__(self, other):  # changes the object itself, as ``+=`` asks
        self.total += other
        return self


class NoInPlace(Total):
    def __iadd__(self, other):
        return NotImplemented  # ``+=`` falls back to ``__add__``: a new object


def test_in_place_operator_runs_the_objects_own_method():
    def fn(x, total):
        alias = total
        total += 5
        return x * alias.total, total.total

    check_breaks(fn, lambda: (torch.randn(2), Total(1)), graphs=1, breaks=0)
    check_breaks(fn, lambda: (torch.randn(2), NoInPlace(1)), graphs=1, breaks=0)
    assert_no_more_breaks(0, fn, torch.randn(2), Total(1))


def _outcomes(fns, *args):
    out = []
    for fn in fns:
        try:
            out.append(fn(*args))
        except (TypeError, RuntimeError) as e:
            out.append((type(e).__name__, str(e)))
    return out


class _Plain:
    pass


_REFUSED = (operator.not_, operator.truth, operator.invert, operator.inv)


def _refused_by_every_value(x, vector, empty, obj):
    # ``not``/``bool`` of a tensor of other than one element and ``~`` of a float one raise
    # whatever the tensors hold; ``operator.inv`` is ``operator.invert``
    return x + 1, [_outcomes(_REFUSED, v) for v in (vector, empty, obj)]


def test_truth_and_invert_errors_decided_by_shape_and_dtype():
    def make():
        return torch.ones(1), torch.ones(2), torch.ones(0), _Plain()

    check_breaks(_refused_by_every_value, make, graphs=1, breaks=0)


def test_invert_of_integer_tensors_is_still_traced():
    def fn(x):
        return operator.inv(x), ~x, operator.invert(x > 0)

    check(fn, torch.tensor([1, -2, 3]))


def _method_truths(x):
    """The truth of a tensor's method itself, not its result (``if preds.is_floating_point:``,
    as torchmetrics writes it): a bound method, a method-wrapper or a C method is always true."""
    out = x + 1
    if x.is_floating_point:
        out = out * 2
    if not x.add:
        out = out - 100
    return out, bool(x.size), bool(x.__add__), (x.float and x.numel)()


def test_the_truth_of_a_tensor_method_is_true():
    check_breaks(_method_truths, lambda: (torch.randn(3),), graphs=1, breaks=0)
    missing = "torch 2.11's Dynamo takes the method's truth for data-dependent branching"
    assert_no_more_breaks(0, _method_truths, torch.randn(3), baseline_missing=missing)


# -- CPython's operator protocol on user objects, with every kind of other operand ----------------
#: the calls the objects' methods made, in order (compared with eager's)
CALLS: list[str] = []


def _method(answer, name):
    def method(self, other):
        CALLS.append(f"{type(self).__name__}.{name}")
        return NotImplemented if answer is NotImplemented else f"{type(self).__name__}.{name}"

    return method


_PROTOCOL_NAMES = ["add", "mod", "lshift"]
_METHODS = [f"__{n}__" for n in _PROTOCOL_NAMES] + [f"__r{n}__" for n in _PROTOCOL_NAMES]
_METHODS += ["__iadd__", "__lt__", "__gt__"]


def _protocol_class(name, answer, bases=(), methods=_METHODS):
    return type(name, bases, {m: _method(answer, m) for m in methods})


Answers = _protocol_class("Answers", "answer")  # every method answers
Declines = _protocol_class("Declines", NotImplemented)  # every method gives NotImplemented
Plain = _protocol_class("Plain", None, methods=[])  # defines none
#: a subclass overriding only the reflected methods (asked first: CPython's subclass rule), and
#: one overriding nothing
Overrides = _protocol_class("Overrides", "answer", (Answers,), [m for m in _METHODS if "__r" in m])
Inherits = _protocol_class("Inherits", None, (Answers,), [])
_USER = {"answers": Answers, "declines": Declines, "plain": Plain}
_USER |= {"overrides": Overrides, "inherits": Inherits}
_BUILTIN = {"tensor": lambda: torch.ones(2), "int": lambda: 3, "str": lambda: "s"}
_BUILTIN |= {"list": lambda: [1], "set": lambda: {1}, "dict": lambda: {"k": 1}}
#: one operator of each protocol path: a binary one, ``%`` (a string formats the object), one whose
#: left method was not inlined, an ordering (the swapped method), an in-place one
_PROTOCOL_OPS = ["a + b", "a % b", "a << b", "a < b", "a += b"]


def _protocol_pairs():
    kinds = {k: (lambda c=c: c()) for k, c in _USER.items()} | _BUILTIN
    for left in kinds:
        for right in kinds:
            if left in _USER or right in _USER:
                yield left, right, kinds[left], kinds[right]


def _protocol_cell(op):
    namespace = {}
    if op.split()[1] not in ("==", "!=", "<=", ">=") and op.split()[1].endswith("="):
        body = f"    {op}\n    r = a"
    else:
        body = f"    r = {op}"
    exec(f"def cell(x, a, b):\n    CALLS.clear()\n{body}\n    return x + 1, r, list(CALLS)\n",
         {"CALLS": CALLS}, namespace)  # fmt: skip
    return namespace["cell"]


def _outcome(fn, make_a, make_b):
    try:
        return fn(torch.zeros(2), make_a(), make_b())
    except TypeError as e:
        return TypeError, str(e)


def _run_cells(op, pairs, outcome, breaks):
    """Each cell ``a OP b`` of ``pairs`` (``_protocol_cell``), run by eager and compiled, both
    as ``outcome`` gives them: the cells whose compiled outcome is not eager's, and those whose
    breaks' kinds are not ``breaks(expected)`` (None: any), each with what was found."""
    from bytegraph.explain import Recorder

    wrong, broke = [], []
    for left, right, make_a, make_b in pairs:
        cell = _protocol_cell(op)
        expected = outcome(cell, make_a, make_b)
        recorder = Recorder()
        with recorder:
            actual = outcome(bytegraph.compile(cell, backend="eager"), make_a, make_b)
        report = recorder.report()
        if repr(actual) != repr(expected):
            wrong.append(f"{left} {op} {right}: {actual!r} != {expected!r}")
        allowed = breaks(expected)
        if allowed is not None and [b.kind for b in report.break_reasons] != allowed:
            broke.append(f"{left} {op} {right}: {report.break_reasons}")
    return wrong, broke


@pytest.mark.parametrize("op", _PROTOCOL_OPS)
def test_user_operator_methods_are_asked_in_cpythons_order(op):
    """``a OP b`` with a user object on either side (its methods answering, giving NotImplemented
    or missing; a subclass of the other's class, overriding or not) and a user object, tensor,
    int, string, list, set or dict on the other: CPython's order of calls (left, then reflected; a
    subclass's own reflected first; a tensor's and a builtin's methods decline), each
    NotImplemented passing on, and the TypeError where all decline. Tensors with user objects
    broke (the object given to the graph), a NotImplemented answer was the result."""

    def breaks(expected):  # none where a method's answer is the result, any else
        answered = isinstance(expected[1], str) and expected[0] is not TypeError
        return [] if answered else None

    wrong, broke = _run_cells(op, _protocol_pairs(), _outcome, breaks)
    assert not wrong, "\n".join(wrong)
    assert not broke, "\n".join(broke)


def _scaled_by_wrapper(x, w):
    return (x + w).t, (w * x).t, (x @ w).t


class _Wrapper:
    def __init__(self, t):
        self.t = t

    def __radd__(self, other):
        return _Wrapper(other - self.t)

    def __mul__(self, other):
        return _Wrapper(self.t * other)

    def __rmatmul__(self, other):
        return _Wrapper(other * 3)


def test_tensor_with_a_user_object_defining_operators_is_traced():
    """``t + obj``, ``obj * t``, ``t @ obj``: the object's Python methods, inlined (it broke:
    the tensor rule gave the object to the graph)."""
    check_breaks(
        _scaled_by_wrapper,
        lambda: (torch.ones(2), _Wrapper(torch.arange(2.0))),
        graphs=1,
        breaks=0,
    )
    assert_no_more_breaks(0, _scaled_by_wrapper, torch.ones(2), _Wrapper(torch.arange(2.0)))


# -- ``==`` and ``!=``: the same protocol; identity where every method declines -------------------
def _raising(name):
    def method(self, other):
        CALLS.append(f"{type(self).__name__}.{name}")
        raise ValueError(f"{type(self).__name__}.{name} raised")

    return method


_EQ = ["__eq__", "__ne__"]
EqAnswers = _protocol_class("EqAnswers", "answer", methods=_EQ)
EqDeclines = _protocol_class("EqDeclines", NotImplemented, methods=_EQ)
#: ``__eq__`` only: ``object.__ne__`` asks it and inverts its answer (NotImplemented passes on)
OnlyEq = _protocol_class("OnlyEq", "answer", methods=["__eq__"])
OnlyEqDeclines = _protocol_class("OnlyEqDeclines", NotImplemented, methods=["__eq__"])
EqOverrides = _protocol_class("EqOverrides", "answer", (EqAnswers,), ["__eq__"])
EqInherits = _protocol_class("EqInherits", None, (OnlyEq,), [])
EqRaises = type("EqRaises", (), {"__eq__": _raising("__eq__")})
_EQ_USER = {"answers": EqAnswers, "declines": EqDeclines, "only_eq": OnlyEq}
_EQ_USER |= {"only_eq_declines": OnlyEqDeclines, "overrides": EqOverrides}
_EQ_USER |= {"inherits": EqInherits, "raises": EqRaises, "plain": Plain}


def _equality_pairs():
    kinds = {k: (lambda c=c: c()) for k, c in _EQ_USER.items()} | _BUILTIN
    kinds["module"] = torch.nn.Identity  # ``object.__eq__``: NotImplemented for another object
    for left in kinds:
        for right in kinds:
            if left in _EQ_USER or right in _EQ_USER:
                yield left, right, kinds[left], kinds[right]
    same = Answers(), EqDeclines(), OnlyEqDeclines()  # one object on both sides: identity
    for obj in same:
        yield "the same", type(obj).__name__, lambda obj=obj: obj, lambda obj=obj: obj


def _equality_outcome(fn, make_a, make_b):
    try:
        return fn(torch.zeros(2), make_a(), make_b())
    except ValueError as e:
        return ValueError, str(e)


@pytest.mark.parametrize("op", ["a == b", "a != b"])
def test_user_equality_methods_are_asked_in_cpythons_order(op):
    """``a == b`` and ``a != b`` with a user object on either side (``__eq__``/``__ne__``
    answering, giving NotImplemented or raising; only ``__eq__``, which ``object.__ne__`` asks and
    inverts; a subclass of the other's class; none) and a user object, tensor, int, string, list,
    set, dict or module on the other: CPython's order of calls (``do_richcompare``: a subclass's
    method first, then the left one's, then the right one's; a tensor's and a builtin's decline),
    identity where all decline, the exception an ``__eq__`` raises. A tensor beside an object
    defining ``__eq__`` broke: the object was given to the graph."""

    def breaks(expected):  # one, at the raise, where an ``__eq__`` raised; else none
        return ["raise"] if expected[0] is ValueError else []

    wrong, broke = _run_cells(op, _equality_pairs(), _equality_outcome, breaks)
    assert not wrong, "\n".join(wrong)
    assert not broke, "\n".join(broke)


def _compared_with_a_tensor(x, obj, peer, raiser):
    CALLS.clear()
    found = (x == obj, obj == x, x != obj, obj != x, obj == 3, "s" != obj, [1] == obj)
    try:
        caught = x == raiser
    except ValueError as e:
        caught = str(e)
    return x + 1, found, obj == peer, peer != obj, caught, list(CALLS)


@pytest.mark.parametrize("kind", ["answers", "declines", "only_eq", "only_eq_declines"])
def test_tensor_compared_with_a_user_object_defining_eq_is_traced(kind):
    """``t == obj``, ``obj == t``, ``t != obj``, ``obj != t`` (the tensor's methods decline:
    the object's own, then identity), beside other operands and an ``__eq__`` raising inside a
    ``try``: one graph, no break, as torch.compile."""

    def make():
        return torch.ones(2), _EQ_USER[kind](), OnlyEq(), EqRaises()

    check_breaks(_compared_with_a_tensor, make, graphs=1, breaks=0, observe=lambda: list(CALLS))
    assert_no_more_breaks(
        0,
        _compared_with_a_tensor,
        *make(),
        baseline_missing="torch.compile on 3.12 runs the frame in Python (t == obj: 'Failed to "
        "convert args/kwargs to proxy'); on 3.11 and 3.13 it compiles one graph, 0 breaks",
    )
