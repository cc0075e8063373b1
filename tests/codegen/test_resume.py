"""``codegen/resume.py``: 3.13's two-local instructions keep naming the right locals in a resume
function, the original's try-block depths reach it however it is built, and its instructions map
back to the original's, and their code is what ``bytecode`` assembles by itself."""

from __future__ import annotations

import dis
import weakref

import pytest
import torch
from bytecode import Bytecode, ConcreteBytecode
from bytegraph.codegen import exception_table, frame_locals, resume
from difftest import check_breaks

import bytegraph


def _many_locals(x, d):
    u = v = None  # locals 2 and 3 here; in a resume function, after its arguments (17 or more)
    p0, p1, p2, p3, p4, p5, p6, p7 = x + 0, x + 1, x + 2, x + 3, x + 4, x + 5, x + 6, x + 7
    p8, p9, p10, p11 = x + 8, x + 9, x + 10, x + 11
    p12, p13, p14, p15 = x + 12, x + 13, x + 14, x + 15
    print("break")  # the resume function is traced: the pairs below are in its graph
    u, v = p0 * 2, p1 * 3  # 3.13: STORE_FAST_STORE_FAST (v, u)
    w = u - v  # 3.13: LOAD_FAST_LOAD_FAST (u, v)
    print("again")  # a break in that resume function, after the pairs: resumes at the right place
    try:
        print("in try")  # a resume function starting in a try block runs in Python
        w = d["missing"] if u.sum() > 1000 else w
    except KeyError:
        w = p2
    return w + p3 + p4 + p5 + p6 + p7 + p8 + p9 + p10 + p11 + p12 + p13 + p14 + p15


def test_two_local_instructions_in_a_resume_function_with_many_arguments():
    """Fuzz seeds 957955461, 957957042 (3.13): a resume function copied ``LOAD_FAST_LOAD_FAST
    (u, v)``, whose argument holds each local's number in 4 bits; there ``u`` and ``v`` come after
    17 arguments, so the pair named other locals (a wrong result, an internal error, or a crash).
    Resume functions spell such a pair as two instructions."""
    pairs = {"LOAD_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST"}
    if pairs <= set(dis.opmap):  # the versions with these instructions: they are exercised
        names = {(i.opname, i.argval) for i in dis.get_instructions(_many_locals)}
        assert {("STORE_FAST_STORE_FAST", ("v", "u")), ("LOAD_FAST_LOAD_FAST", ("u", "v"))} <= names
    # torch.compile (torch._dynamo.explain, same inputs): 2 graphs, 2 breaks counted; the third
    # resume, starting in the try block, is a skipped frame there (run in Python, counted as
    # "unimplemented"), a break here: in both, that frame runs in Python.
    check_breaks(_many_locals, lambda: (torch.tensor([1.0, -2.0]), {}), graphs=2, breaks=3)


@pytest.mark.parametrize("depths_read_first", [True, False], ids=["depths read", "depths repaired"])
@pytest.mark.parametrize("big", [False, True], ids=["no exception", "KeyError handled"])
def test_try_block_depths_in_a_resume_function(monkeypatch, depths_read_first, big):
    """Either the try-block depths are read from the original before building (the usual way), or,
    where they cannot be matched, ``bytecode``'s unreached depths are repaired afterwards from the
    original's table, through the instruction map (which 3.13's split pairs shift)."""
    # each test decodes the template itself: one's decoding (with or without depths) is cached
    monkeypatch.setattr(resume, "_DECODED", weakref.WeakKeyDictionary())
    if not depths_read_first:
        monkeypatch.setattr(exception_table, "set_try_depths", lambda items, code: False)
    scale = 1000.0 if big else 1.0
    compiled, _, _ = check_breaks(
        _many_locals, lambda: (torch.tensor([scale, -2.0]), {}), graphs=2, breaks=3
    )
    resumes = list(bytegraph.state_of(compiled).resumes.values())
    in_python = [entry for entry in resumes if not hasattr(entry, "__bytegraph__")]
    assert in_python  # the one starting in the try block: its code is the resume function's own
    for entry in in_python:
        table = ConcreteBytecode.from_code(entry.__code__).exception_table
        assert table and all(e.stack_depth < 1000 for e in table)


def test_split_pairs_map_back_to_the_original():
    """Every instruction of a resume function after its prefix names the original's instruction it
    came from (a jump: the same target); both halves of a split pair name the pair."""
    fn = _many_locals
    originals = [i for i in dis.get_instructions(fn) if i.opname != "EXTENDED_ARG"]
    said = next(k for k, i in enumerate(originals) if i.argval == "break")
    index = next(k for k in range(said, len(originals)) if originals[k].opname == "POP_TOP") + 1
    point = resume.ResumePoint(index, 0, ("x", "d", *(f"p{k}" for k in range(16))))
    made = resume.make_resume(fn, None, point)
    first = made.__bytegraph_resume__.first
    copied = [i for i in dis.get_instructions(made) if i.opname != "EXTENDED_ARG"]
    at_original = exception_table.unit_index(fn.__code__)
    at_copied = exception_table.unit_index(made.__code__)
    # after the prefix: the whole original after its RESUME, the pairs spelled as two
    after_resume = originals[[i.opname for i in originals].index("RESUME") + 1 :]
    pairs = sum(i.opname in resume._PAIRS for i in after_resume)
    assert len(copied) - first == len(after_resume) + pairs
    for k in range(first, len(copied)):
        template, at = resume.resume_origin(made, k)
        assert template is fn
        original, instr = originals[at], copied[k]
        if original.opname in resume._PAIRS:
            assert instr.opname in resume._PAIRS[original.opname]
            assert instr.argval in original.argval
        elif instr.opcode in dis.hasjrel or instr.opcode in dis.hasjabs:
            assert instr.opname == original.opname
            target = resume.resume_origin(made, at_copied[instr.argval // 2])[1]
            assert target == at_original[original.argval // 2]
        else:
            assert (instr.opname, instr.argval) == (original.opname, original.argval)


def test_resume_functions_of_one_template_share_its_decoding(monkeypatch):
    """A template is decoded once for all its resume functions (``resume._decoded``): made one
    after another, at each statement after a call (one of them in the try block), each is the
    function made from a decoding of its own."""
    fn = _many_locals
    instrs = [i for i in dis.get_instructions(fn) if i.opname != "EXTENDED_ARG"]
    after_calls = [k + 1 for k in range(1, len(instrs)) if instrs[k].opname == "POP_TOP"]
    after_calls = [k for k in after_calls if instrs[k - 2].opname == "CALL"]
    names = ("x", "d", *(f"p{k}" for k in range(16)))

    def made(index):
        new = resume.make_resume(fn, None, resume.ResumePoint(index, 0, names))
        code = new.__code__
        parts = ("co_code", "co_exceptiontable", "co_linetable", "co_stacksize", "co_varnames")
        return [getattr(code, part) for part in parts] + [new.__bytegraph_resume__]

    shared = [made(index) for index in after_calls]
    own = []
    for index in after_calls:
        monkeypatch.setattr(resume, "_DECODED", weakref.WeakKeyDictionary())
        own.append(made(index))
    assert len(after_calls) == 3 and sum(bool(parts[1]) for parts in own) >= 1
    assert shared == own


def _loop(x, xs):
    total = x
    for y in xs:
        print("in the loop")
        with torch.no_grad():
            print("in the with block")
            total = total + y
    return total


@pytest.mark.parametrize("fn", [_many_locals, _loop], ids=["try block", "loop, with block"])
def test_resume_code_is_what_bytecode_assembles(monkeypatch, fn):
    """``make_function`` hands ``bytecode`` the stack size of its control flow graph where no
    try-block depth is to be computed, sparing ``to_code`` its rebuild of the instructions from
    that graph: each resume function's code (at each statement after a ``print``) is the code
    ``to_code`` makes by itself."""
    real = Bytecode.to_code
    compared = []

    def to_code(bc, *args, stacksize=None, compute_exception_stack_depths=True, **kwargs):
        kwargs["compute_exception_stack_depths"] = compute_exception_stack_depths
        code = real(bc, *args, stacksize=stacksize, **kwargs)
        if stacksize is not None:
            own = real(bc, compute_exception_stack_depths=False)
            parts = ("co_code", "co_exceptiontable", "co_linetable", "co_stacksize", "co_consts")
            compared.append([getattr(code, p) for p in parts] == [getattr(own, p) for p in parts])
        return code

    monkeypatch.setattr(Bytecode, "to_code", to_code)
    instrs = [i for i in dis.get_instructions(fn) if i.opname != "EXTENDED_ARG"]
    # after each print: the stack there (the loop's iterator, the with block's exit)
    depths = {"break": 0, "again": 0, "in try": 0, "in the loop": 1, "in the with block": 2}
    points = []
    for k, instr in enumerate(instrs):
        if instr.opname == "LOAD_CONST" and instr.argval in depths:
            end = next(j for j in range(k, len(instrs)) if instrs[j].opname == "POP_TOP")
            points.append(
                resume.ResumePoint(end + 1, depths[instr.argval], fn.__code__.co_varnames)
            )
    for point in points:
        resume.make_resume(fn, None, point)
    assert len(compared) == len(points) >= 2 and all(compared)


def _sum_with(xs, g):
    total = 0
    for v in xs:
        total = total + v + next(g)
    return total


def _resumed_in_its_prefix() -> tuple:
    """A resume function of ``_sum_with`` at its loop, making ``g`` in its prefix
    (``made_locals``), and one of that resume function at its prefix's ``g = make_local(g)``, the
    value made on the stack: its template's ``__stack0`` (the loop's iterator) still to be read."""
    instrs = [i for i in dis.get_instructions(_sum_with) if i.opname != "EXTENDED_ARG"]
    at_loop = next(k for k, i in enumerate(instrs) if i.opname == "FOR_ITER")
    point = resume.ResumePoint(at_loop, 1, ("g", "total"), made_locals=("g",))
    outer = resume.make_resume(_sum_with, None, point)
    prefix = [i for i in dis.get_instructions(outer) if i.opname != "EXTENDED_ARG"]
    made = next(k for k, i in enumerate(prefix) if i.opname == "STORE_FAST" and i.argval == "g")
    inner = resume.make_resume(outer, None, resume.ResumePoint(made, 1, ("total", "__stack0")))
    return outer, inner


def test_a_resume_function_entered_in_its_templates_prefix_names_its_stack_apart():
    """Its stack argument and its template's ``__stack0``, a live local there, are two arguments:
    named alike, the generator made in the prefix and the loop's iterator were one argument."""
    _, inner = _resumed_in_its_prefix()
    assert inner(0, iter([1, 2]), iter([10, 20])) == _sum_with([1, 2], iter([10, 20]))
    assert inner.__code__.co_varnames[:3] == ("total", "__stack0", "___stack0")


def test_a_resume_function_entered_in_its_templates_prefix_stands_for_the_users_frame():
    """``locals()`` run in it lists the user's locals, not its template's ``__stack0``."""
    outer, inner = _resumed_in_its_prefix()
    user = frame_locals.UserFrame.of(_sum_with.__code__)
    assert frame_locals.registered(outer.__code__) == user
    assert frame_locals.registered(inner.__code__) == user
