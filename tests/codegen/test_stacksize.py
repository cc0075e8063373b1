"""``transform.flat_stacksize``: the stack size of generated code without ``bytecode``'s control
flow graph, equal to the one ``bytecode`` computes wherever it gives one."""

from __future__ import annotations

import dataclasses
import inspect
import json
import types

from bytecode import Bytecode, TryBegin
from bytegraph.codegen import exception_table
from bytegraph.codegen.transform import flat_stacksize, make_function


def _codes(*modules: types.ModuleType) -> list[types.CodeType]:
    """Every code object of the modules' functions and methods, nested ones included."""
    found: list[types.CodeType] = []
    pending = [
        obj.__code__
        for module in modules
        for value in vars(module).values()
        for obj in ([value] if not inspect.isclass(value) else vars(value).values())
        if inspect.isfunction(obj) and obj.__module__ == module.__name__
    ]
    while pending:
        code = pending.pop()
        found.append(code)
        pending += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return found


def test_the_flat_walk_gives_bytecodes_stack_size() -> None:
    """Loops, branches, with and try blocks of real code (its handlers at the depths of the
    code's own exception table, as resume functions and routed copies set them)."""
    walked = with_try = 0
    for code in _codes(json.decoder, json.encoder, inspect, dataclasses):
        bc = Bytecode.from_code(code)
        items = list(bc)
        has_try = any(isinstance(item, TryBegin) for item in items)
        if has_try and not exception_table.set_try_depths(items, code):
            continue
        size = flat_stacksize(bc)
        if size is None:
            continue
        assert size == bc.compute_stacksize(), code.co_qualname
        walked += 1
        with_try += has_try
    assert walked > 150 and with_try > 20, (walked, with_try)


def test_a_function_made_with_a_loop_and_a_try_block_runs() -> None:
    def template(xs):
        total = 0
        for x in xs:
            try:
                total += 10 // x
            except ZeroDivisionError:
                total -= 1
        return total

    bc = Bytecode.from_code(template.__code__)
    items = list(bc)
    assert exception_table.set_try_depths(items, template.__code__)
    body = [item for item in items if getattr(item, "name", None) not in ("RESUME",)]
    fn = make_function(template, body, name="copy", compute_exception_depths=False)
    assert fn.__code__.co_stacksize == bc.compute_stacksize()
    assert fn([1, 0, 5]) == template([1, 0, 5]) == 11
