"""The ``Emitter`` on the running Python: each version-dependent method builds code that runs
(the CALL convention's NULL, keyword calls, discarding a NULL, conditional jumps on values that are
not bools, ``MAKE_FUNCTION``'s parts), checked by running functions made with ``make_function``."""

from __future__ import annotations

import dis

import pytest
from bytecode import Label
from bytegraph.codegen.emit import Emitter
from bytegraph.codegen.pyversion import PY313
from bytegraph.codegen.transform import make_function


def build(cg: Emitter, argnames: tuple[str, ...] = ("a",)):
    def template():
        pass

    return make_function(template, cg.instrs, name="generated", argnames=argnames)


def opnames(fn) -> list[str]:
    return [i.opname for i in dis.get_instructions(fn) if i.opname != "CACHE"]


def pair(a, b=0, *, c=0):
    return (a, b, c)


def test_push_callable_then_call_with_keywords():
    cg = Emitter()
    cg.push_callable(lambda: cg.load_const(pair))
    cg.load_local("a").load_const(2).load_const(3)
    cg.call(3, kw_names=("c",)).return_value()
    fn = build(cg)
    assert fn(1) == (1, 2, 3)
    assert ("CALL_KW" in opnames(fn)) == PY313


def test_call_function_puts_the_null_next_to_the_callable():
    cg = Emitter()
    cg.load_const(pair).load_local("a").load_const(5)
    cg.call_function(2, kw_names=("b",)).return_value()
    assert build(cg)(7) == (7, 5, 0)


def test_call_ex_after_push_callable():
    cg = Emitter()
    cg.push_callable(lambda: cg.load_const(pair))
    cg.load_local("a").load_const({"c": 4}).call_ex(has_kwargs=True).return_value()
    assert build(cg)((1, 2)) == (1, 2, 4)


def test_add_null_to_callable():
    cg = Emitter()
    cg.load_const(len).add_null_to_callable().load_local("a").call(1).return_value()
    assert build(cg)("abc") == 3


def test_pop_null():
    cg = Emitter()
    cg.load_local("a").push_null().pop_null().return_value()
    assert build(cg)("kept") == "kept"


@pytest.mark.parametrize("value", [[], [0], 0.0, 2.5, "", "s"])
@pytest.mark.parametrize("when", [True, False])
def test_conditional_jumps_test_the_truth_of_any_value(value, when):
    cg = Emitter()
    taken = Label()
    cg.load_local("a")
    if when:
        cg.pop_jump_if_true(taken)
    else:
        cg.pop_jump_if_false(taken)
    cg.load_const("fell through").return_value()
    cg.label(taken).load_const("jumped").return_value()
    assert build(cg)(value) == ("jumped" if bool(value) == when else "fell through")


def test_make_function_with_defaults_and_kwdefaults():
    def inner(x, y=10, *, z=100):
        return x + y + z

    cg = Emitter()
    cg.load_const((1,)).load_const({"z": 2}).load_const(inner.__code__)
    cg.make_function(0x01 | 0x02).store_local("f")
    cg.push_callable(lambda: cg.load_local("f")).load_local("a").call(1).return_value()
    fn = build(cg)
    assert fn(5) == 8
    assert ("SET_FUNCTION_ATTRIBUTE" in opnames(fn)) == PY313
