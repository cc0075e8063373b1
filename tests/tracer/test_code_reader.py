"""``tracer/code_reader.py`` reads a code object into the instructions, labels and exception
handlers that ``Bytecode.from_code`` gives: checked instruction by instruction (name, argument,
location, jump target, handler) on the code of torch, transformers and the standard library, and
on code made to hold the rare cases (EXTENDED_ARG, nested handlers, f-string flags, ``super()``,
cells). The handlers come from ``codegen/exception_table.py``, checked here against the library's
try blocks (handler, stack depth, lasti) and by writing each table back byte for byte."""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import dis
import enum
import functools
import importlib
import inspect
import json
import re
import types
import typing

import pytest
import torch
from bytecode import Bytecode, Instr, Label, TryBegin, TryEnd
from bytegraph.codegen import exception_table
from bytegraph.tracer import code_reader

pytest.importorskip("transformers")
from transformers.models.gpt2 import modeling_gpt2  # noqa: E402
from transformers.models.llama import modeling_llama  # noqa: E402
from transformers.models.t5 import modeling_t5  # noqa: E402

MODULES = [
    asyncio.base_events,
    collections,
    dataclasses,
    enum,
    functools,
    inspect,
    json.decoder,
    re._parser,
    typing,
    torch.nn.modules.module,
    torch.nn.functional,
    importlib.import_module("torch.optim.adam"),
    importlib.import_module("torch.optim.optimizer"),
    torch.fx.graph,
    modeling_gpt2,
    modeling_llama,
    modeling_t5,
]


def _codes_of(module: types.ModuleType) -> list[types.CodeType]:
    codes: dict[int, types.CodeType] = {}

    def add(code: types.CodeType) -> None:
        if id(code) not in codes:
            codes[id(code)] = code
            for const in code.co_consts:
                if isinstance(const, types.CodeType):
                    add(const)

    for value in vars(module).values():
        members = vars(value).values() if isinstance(value, type) else [value]
        for member in members:
            member = getattr(member, "__func__", member)
            member = member.fget if isinstance(member, property) else member
            if isinstance(member, types.FunctionType) and member.__module__ == module.__name__:
                add(member.__code__)
    return list(codes.values())


def library_try_blocks(code: types.CodeType) -> tuple[list, list[int]]:
    """For each instruction, as ``Bytecode.from_code`` reads the exception table: (handler index,
    stack depth, lasti) of the innermost try block covering it (None outside), and how many do."""
    items = list(Bytecode.from_code(code, conserve_exception_block_stackdepth=True))
    labels, count = {}, 0
    for item in items:
        if isinstance(item, Instr):
            count += 1
        elif isinstance(item, Label):
            labels[item] = count
    blocks: list = []
    counts: list[int] = []
    active: list[TryBegin] = []
    for item in items:
        if isinstance(item, TryBegin):
            active.append(item)
        elif isinstance(item, TryEnd):
            if item.entry in active:
                active.remove(item.entry)
        elif isinstance(item, Instr):
            top = active[-1] if active else None
            blocks.append(top and (labels[top.target], top.stack_depth, top.push_lasti))
            counts.append(len(active))
    return blocks, counts


def assert_same_reading(code: types.CodeType) -> None:
    got = code_reader.read(code)
    want = code_reader._read_with_library(code)
    (instrs, labels, handlers, depths), (w_instrs, w_labels, _, _) = got, want
    blocks, w_depths = library_try_blocks(code)
    w_handlers = [block and block[0] for block in blocks]
    where = f"{code.co_qualname} ({code.co_filename}:{code.co_firstlineno})"
    assert len(instrs) == len(w_instrs), where
    for i, (a, b) in enumerate(zip(instrs, w_instrs, strict=True)):
        assert (a.name, a.opcode, a.location) == (b.name, b.opcode, b.location), (where, i, a, b)
        if isinstance(b.arg, Label):
            assert isinstance(a.arg, Label), (where, i, a, b)
            assert labels[a.arg] == w_labels[b.arg], (where, i, a, b)
        else:
            assert type(a.arg) is type(b.arg) and a.arg == b.arg, (where, i, a, b)
    assert handlers == w_handlers, where
    assert depths == w_depths, where
    assert sorted(labels.values()) == sorted(w_labels.values()), where
    cover = exception_table.covering(code)
    assert [e and (e.target, e.depth, e.lasti) for e in cover] == blocks, where
    table = code.co_exceptiontable
    assert exception_table.encode(exception_table.parse(table)) == table, where


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_reads_what_the_bytecode_library_reads(module):
    codes = _codes_of(module)
    assert len(codes) > 5
    for code in codes:
        assert_same_reading(code)


def _rare_cases():
    # Over 256 constants and names, and jumps longer than 255 code units: EXTENDED_ARG.
    body = "".join(f"        x{i} = {i}.5 + y\n" for i in range(300))
    source = f"def extended(y):\n    if y:\n{body}        return x0\n    return None\n"
    namespace: dict = {}
    exec(compile(source, "<extended>", "exec"), namespace)

    def nested_handlers(a):
        try:
            with open(a) as f:
                try:
                    return f.read()
                except (OSError, ValueError) as e:
                    raise RuntimeError(a) from e
                finally:
                    a = None
        except* KeyError:
            pass

    def formats(x, y):
        return f"{x!r:>{y}} {x!s} {x!a:10} {y}"

    class Child(json.JSONDecoder):
        def decode(self, s):
            return super().decode(s)

    def cells(a):
        b = a + 1

        def inner(c):
            nonlocal b
            b += c
            return a + b

        return inner, [b * i for i in range(a)], {i: a for i in range(b)}

    async def agen(n):
        async with asyncio.timeout(n):
            async for i in n:
                yield i
        await asyncio.sleep(0)

    def matching(value):
        match value:
            case {"x": int(x), **rest}:
                return x, rest
            case [1, *others] if others:
                return others
            case str() | bytes():
                return None
        return value

    return [namespace["extended"], nested_handlers, formats, Child.decode, cells, agen, matching]


@pytest.mark.parametrize("fn", _rare_cases(), ids=lambda f: f.__name__)
def test_reads_rare_instructions_as_the_library_does(fn):
    codes = [fn.__code__, *(c for c in fn.__code__.co_consts if isinstance(c, types.CodeType))]
    for code in codes:
        assert_same_reading(code)


def test_extended_args_are_exercised():
    extended = _rare_cases()[0]
    assert any(i.opname == "EXTENDED_ARG" for i in dis.get_instructions(extended))


def test_without_the_trusted_constructor_it_reads_through_the_library(monkeypatch):
    calls = []
    library = code_reader._read_with_library
    monkeypatch.setattr(code_reader, "_FAST", False)
    monkeypatch.setattr(code_reader, "_read_with_library", lambda c: calls.append(c) or library(c))
    code = modeling_llama.LlamaAttention.forward.__code__
    instrs, *_ = code_reader.read(code)
    assert calls == [code]
    assert [i.name for i in instrs] == [i.name for i in library(code)[0]]


def _try_region_at_an_extended_jump() -> types.CodeType:
    """What bytegraph's resume functions look like: a try region whose first instruction is a jump
    long enough for an EXTENDED_ARG. The bytecode library starts the exception table's region at
    the jump itself, after its EXTENDED_ARG (a fuzzed program's resume function failed to read)."""
    far, handler = Label(), Label()
    begin = TryBegin(handler, push_lasti=True)
    code = Bytecode(
        [
            Instr("RESUME", 0),
            begin,
            Instr("JUMP_FORWARD", far),
            TryEnd(begin),
            *(Instr("NOP") for _ in range(300)),
            far,
            Instr("LOAD_CONST", None),
            Instr("RETURN_VALUE"),
            handler,
            Instr("RERAISE", 1),
        ]
    )
    return code.to_code()


def test_a_try_region_starting_after_an_extended_arg():
    code = _try_region_at_an_extended_jump()
    units = {i.offset: i.opname for i in dis.get_instructions(code, show_caches=True)}
    (first, *_), *_ = exception_table.parse(code.co_exceptiontable)
    assert units[2 * first] == "JUMP_FORWARD" and units[2 * first - 2] == "EXTENDED_ARG"
    instrs, labels, handlers, depths = code_reader.read(code)
    jump = next(k for k, i in enumerate(instrs) if i.name == "JUMP_FORWARD")
    # CPython looks the jump's own offset up in the table: the region covers it. The library
    # drops a region that starts inside an instruction, so it differs there, and only there.
    assert handlers[jump] == next(k for k, i in enumerate(instrs) if i.name == "RERAISE")
    assert depths[jump] == 1
    w_instrs, w_labels, *_ = code_reader._read_with_library(code)
    blocks, w_depths = library_try_blocks(code)
    w_handlers = [block and block[0] for block in blocks]
    assert [(i.name, i.arg if not isinstance(i.arg, Label) else labels[i.arg]) for i in instrs] == [
        (i.name, i.arg if not isinstance(i.arg, Label) else w_labels[i.arg]) for i in w_instrs
    ]
    assert (w_handlers[jump], w_depths[jump]) == (None, 0)
    assert handlers[:jump] + handlers[jump + 1 :] == w_handlers[:jump] + w_handlers[jump + 1 :]
