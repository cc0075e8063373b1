"""Building and unpacking containers, slices and strings (f-strings on constants)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bytecode import Instr

from ..exc import Unsupported
from ..variables import dispatch
from ..variables.base import VariableTracker
from ..variables.constants import ConstantVariable, joined_text, make_slice
from ..variables.containers import (
    DictVariable,
    ListVariable,
    SetRecipe,
    SetVariable,
    TupleVariable,
    hash_key,
    is_mapping,
    mapping_items,
    real_iterable,
    recipe_part,
)
from .registry import handler

if TYPE_CHECKING:
    from ..translator import Translator


@handler("BUILD_TUPLE", pops=lambda inst: inst.arg)
def build_tuple(tx: Translator, inst: Instr) -> None:
    """(items*n -- tuple)"""
    tx.push(TupleVariable(tx.popn(inst.arg)))


@handler("BUILD_LIST", pops=lambda inst: inst.arg)
def build_list(tx: Translator, inst: Instr) -> None:
    """(items*n -- list)"""
    tx.push(ListVariable(tx.popn(inst.arg)))


@handler("BUILD_SET", pops=lambda inst: inst.arg)
def build_set(tx: Translator, inst: Instr) -> None:
    """(items*n -- set)  sets of Python constants only."""
    keys = [_const_key(v) for v in tx.popn(inst.arg)]
    tx.push(SetVariable(set(keys), recipe=SetRecipe(set, (("keys", keys),))))


@handler("BUILD_MAP")
def build_map(tx: Translator, inst: Instr) -> None:
    """(k1 v1 ... kn vn -- dict)"""
    items = tx.popn(2 * inst.arg)
    tx.push(DictVariable({_const_key(k): v for k, v in zip(items[::2], items[1::2], strict=True)}))


@handler("BUILD_CONST_KEY_MAP")
def build_const_key_map(tx: Translator, inst: Instr) -> None:
    """(v1 ... vn keys_tuple -- dict)"""
    keys = tx.pop().as_python_constant()
    values = tx.popn(inst.arg)
    tx.push(DictVariable(dict(zip(keys, values, strict=True))))


@handler("BUILD_STRING", pops=lambda inst: inst.arg)
def build_string(tx: Translator, inst: Instr) -> None:
    """(s1 ... sn -- joined)  strings, or texts made after the graph (``TextVariable``)"""
    tx.push(joined_text(tx.popn(inst.arg)))


@handler("BUILD_SLICE")
def build_slice(tx: Translator, inst: Instr) -> None:
    """(start stop [step] -- slice)"""
    tx.push(make_slice(tx.popn(inst.arg)))


_const_key = hash_key


def _fill(tx: Translator, depth: int, add: Callable[[Any], None]) -> None:
    """``add`` to the items of the list, set or dict being built ``depth`` deep on the stack. One
    made in the trace is the tracer's own; but a resume function takes one under construction at a
    graph break as an argument (``[*xs, f(), y]`` broken at ``f()``), and what it adds then changes
    that object: a side effect, replayed on it."""
    container = tx.peek(depth)
    if container.source is not None:
        tx.output.side_effects.before_mutation(container)
    add(container.items)
    tx.output.side_effects.mark_mutated(container)


@handler("LIST_APPEND")
def list_append(tx: Translator, inst: Instr) -> None:
    """(list ... item -- list ...)  comprehension append to the list inst.arg deep."""
    item = tx.pop()
    _fill(tx, inst.arg, lambda items: items.append(item))


def _fill_set(
    tx: Translator, depth: int, name: str, args: list[Any], part: tuple[str, Any] | None
) -> None:
    """``_fill`` for a set: an input set under construction (a resume function's argument) logs
    the call, replayed on the real set as the set's own ``add``/``update`` are."""
    container = tx.peek(depth)
    if container.source is not None:
        tx.output.side_effects.before_mutation(container)
    before = set(container.items)
    given, entry = container.log_call(name, args)
    getattr(container.items, name)(*given)
    container.logged(entry)
    container.added_to(before)
    container.changed(name, [part])
    tx.output.side_effects.mark_mutated(container)


@handler("SET_ADD")
def set_add(tx: Translator, inst: Instr) -> None:
    """(set ... item -- set ...)"""
    key = _const_key(tx.pop())
    _fill_set(tx, inst.arg, "add", [key], ("key", key))


@handler("MAP_ADD")
def map_add(tx: Translator, inst: Instr) -> None:
    """(dict ... key value -- dict ...)"""
    value, key = tx.pop(), tx.pop()
    _fill(tx, inst.arg, lambda items: items.__setitem__(_const_key(key), value))


@handler("LIST_EXTEND")
def list_extend(tx: Translator, inst: Instr) -> None:
    """(list ... iterable -- list ...)"""
    added = dispatch.iterate(tx, tx.pop())
    _fill(tx, inst.arg, lambda items: items.extend(added))


@handler("SET_UPDATE")
def set_update(tx: Translator, inst: Instr) -> None:
    """(set ... iterable -- set ...)"""
    iterable = tx.pop()
    _fill_set(tx, inst.arg, "update", [real_iterable(tx, iterable)], recipe_part(iterable))


@handler("DICT_UPDATE", "DICT_MERGE")
def dict_update(tx: Translator, inst: Instr) -> None:
    """(dict ... mapping -- dict ...)  ``{**a}`` (DICT_UPDATE) and ``f(**a)`` (DICT_MERGE): any
    object whose type has ``keys`` is a mapping, read as ``dict(a)`` reads it (``mapping_items``).
    DICT_MERGE refuses a key already given (CPython's TypeError names the callee: a break)."""
    mapping = tx.pop()
    if not is_mapping(mapping):
        raise Unsupported("dict_merge", f"** of {mapping}, which is not a mapping")
    merged = mapping_items(tx, mapping)
    if inst.name == "DICT_MERGE" and any(k in tx.peek(inst.arg).items for k in merged):
        raise Unsupported("dict_merge", "a keyword argument given twice")
    _fill(tx, inst.arg, lambda items: items.update(merged))


@handler("LIST_TO_TUPLE", until=(3, 11))
def list_to_tuple(tx: Translator, inst: Instr) -> None:
    """(list -- tuple)"""
    tx.push(TupleVariable(tx.pop().unpack(tx)))


@handler("UNPACK_SEQUENCE", pops=1)
def unpack_sequence(tx: Translator, inst: Instr) -> None:
    """(seq -- item_n ... item_1)"""
    items = dispatch.iterate(tx, tx.pop())
    if len(items) != inst.arg:
        raise Unsupported("unpack", f"cannot unpack {len(items)} values into {inst.arg}")
    for item in reversed(items):
        tx.push(item)


@handler("UNPACK_EX")
def unpack_ex(tx: Translator, inst: Instr) -> None:
    """(seq -- after... list before...)  ``a, *b, c = seq``; arg = before | (after << 8)."""
    before, after = inst.arg & 0xFF, inst.arg >> 8
    items = dispatch.iterate(tx, tx.pop())
    if len(items) < before + after:
        raise Unsupported("unpack", f"not enough values to unpack ({len(items)})")
    middle = ListVariable(items[before : len(items) - after])
    for item in reversed([*items[:before], middle, *items[len(items) - after :]]):
        tx.push(item)


@handler("FORMAT_VALUE", until=(3, 12), pops=lambda inst: 2 if inst.arg & 0x04 else 1)
def format_value(tx: Translator, inst: Instr) -> None:
    """(value [spec] -- str)  f-string formatting of constants; flags in arg."""
    spec = tx.pop() if inst.arg & 0x04 else ConstantVariable("")
    tx.push(_format(tx, _convert(tx, tx.pop(), inst.arg & 0x03), spec))


@handler("CONVERT_VALUE", pops=1)
def convert_value(tx: Translator, inst: Instr) -> None:
    """(value -- str)  3.13: the ``!s``/``!r``/``!a`` of an f-string field, on constants.
    https://docs.python.org/3.13/library/dis.html#opcode-CONVERT_VALUE"""
    tx.push(_convert(tx, tx.pop(), int(inst.arg)))


@handler("FORMAT_SIMPLE", pops=1)
def format_simple(tx: Translator, inst: Instr) -> None:
    """(value -- str)  3.13: ``format(value)`` of an f-string field, on constants."""
    tx.push(_format(tx, tx.pop(), ConstantVariable("")))


@handler("FORMAT_WITH_SPEC", pops=2)
def format_with_spec(tx: Translator, inst: Instr) -> None:
    """(value spec -- str)  3.13: ``format(value, spec)`` of an f-string field, on constants."""
    spec = tx.pop()
    tx.push(_format(tx, tx.pop(), spec))


def _constant(value: VariableTracker) -> Any:
    if not value.is_python_constant():
        raise Unsupported(
            "format", f"f-string of {value} (only constants are formatted during tracing)"
        )
    return value.as_python_constant()


def _convert(tx: Translator, value: VariableTracker, conversion: int) -> VariableTracker:
    """``str``/``repr``/``ascii`` (conversion 1, 2, 3) of a value, as the builtin; 0: the value
    itself."""
    if conversion == 0:
        return value
    return dispatch.call_builtin(tx, {1: str, 2: repr, 3: ascii}[conversion], [value], {})


def _format(tx: Translator, value: VariableTracker, spec: VariableTracker) -> VariableTracker:
    """``format(value, spec)``: a string as it is, constants folded, known objects computed."""
    if not value.is_python_constant():
        return dispatch.call_builtin(tx, format, [value, spec], {})
    return ConstantVariable(format(_constant(value), _constant(spec)))
