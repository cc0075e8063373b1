"""Exceptions raised and caught inside the trace: ``raise``, ``try``/``except``/``finally``.

``raise_traced`` is where every exception of the traced code starts (``RAISE_VARARGS``, ``RERAISE``,
and the ``PythonError`` a builtin raises, see ``Translator.step``). If ``will_be_caught`` finds an
``except`` clause of a traced frame that matches, the exception travels up the translators as a
``TracedException`` and ``catch`` unwinds the frame that handles it to its handler (stack depth and
``lasti`` from the code's exception table), where the handler opcodes below run as CPython runs
them. Otherwise it is a graph break at the raising instruction: CPython raises it there, with the
user's traceback. The decision is made before anything unwinds, by reading the handlers' code
(``except`` clauses and their class expressions) and by tracing, on a trial undone after, the
``__exit__`` of each ``with`` block on the way (a true result swallows the exception); an exit it
cannot trace or any handler code it does not recognise makes it a break. A graph break later,
while an exception is being handled, abandons the trace (``convert`` falls back to Python):
resume code cannot re-enter a handler.
"""

from __future__ import annotations

from inspect import CO_GENERATOR
from typing import TYPE_CHECKING, Any

from bytecode import Instr

from ...codegen.exception_table import Entry, covering
from ..exc import PythonError, TracedException, Unsupported
from ..variables import dispatch
from ..variables.base import IdentityKey, VariableTracker
from ..variables.constants import ConstantVariable
from ..variables.iterators import GeneratorVariable
from ..variables.objects import ExceptionVariable, is_simple_exception, keyword_attributes
from .load_store import load_deref
from .registry import handler

if TYPE_CHECKING:
    from ..translator import Translator


def _entry(tx: Translator, index: int) -> Entry | None:
    """The exception-table entry covering instruction ``index`` of ``tx``'s code."""
    cover = covering(tx.code)
    return cover[index] if index < len(cover) else None


# -- deciding ----------------------------------------------------------------------------------
def will_be_caught(tx: Translator, exc: ExceptionVariable) -> bool:
    """Does an ``except`` clause of ``tx`` or of a traced caller catch ``exc`` raised at ``tx``'s
    current instruction, a ``with`` block's ``__exit__`` swallow it, or a builtin between them
    (``hasattr`` catching the AttributeError of a traced ``__getattr__``:
    ``Translator.builtin_catches``)? (Raises ``Unsupported`` when an ``__exit__`` on the way does
    not trace, or on unrecognised handler code.)"""
    cls = exc.cls
    frame: Translator | None = tx
    while frame is not None:
        if _frame_catches(frame, frame.ip - 1, exc):
            return True
        if frame.code.co_flags & CO_GENERATOR:  # the exception goes to whoever resumed it
            frame = frame.resumed_by
            continue
        frame = frame.parent
        if frame is not None and issubclass(cls, tuple(frame.builtin_catches)):
            return True
    return False


def handler_runs(tx: Translator, classes: tuple[type[BaseException], ...]) -> bool:
    """Would an exception of one of ``classes``, raised at ``tx``'s current instruction, run code
    of the traced frames' handlers before it leaves them: an ``except`` clause matching it (read
    as ``will_be_caught`` reads it), a bare ``except``, a ``finally`` body, or a ``with`` block's
    ``__exit__`` other than a torch state context's (``exit_ignores_exception``: grad mode,
    autocast, whose state the compiled call restores itself)? Handler code not recognised
    counts as running. Asked of an operator that may raise when the graph runs
    (``deferred_checks.note_op``): raised out of the graph, it would skip them."""
    frame: Translator | None = tx
    while frame is not None:
        try:
            for cls in classes:
                if _frame_catches(frame, frame.ip - 1, cls, seen=True):
                    return True
        except Unsupported:
            return True
        if frame.code.co_flags & CO_GENERATOR:
            frame = frame.resumed_by
            continue
        frame = frame.parent
        if frame is not None and any(issubclass(c, tuple(frame.builtin_catches)) for c in classes):
            return True
    return False


def _frame_catches(
    tx: Translator, index: int, exc: ExceptionVariable | type[BaseException], seen: bool = False
) -> bool:
    """Follow the handlers an exception raised at ``index`` would run in this frame: does one
    catch it (an ``except`` clause, an ``__exit__`` swallowing ``exc``)? ``seen``: does one run
    code with it at all (``handler_runs``; ``exc`` a class)?"""
    cls = exc if seen else exc.cls
    ins = tx.instructions
    for _ in range(64):
        entry = _entry(tx, index)
        if entry is None:
            return False
        target = entry.target
        names = [i.name for i in ins[target : target + 4]]
        if names[:1] == ["PUSH_EXC_INFO"]:
            if names[1:2] == ["WITH_EXCEPT_START"]:
                if seen:
                    if not _exit_ignores_exception(tx, entry.depth, target):
                        return True
                    index = _with_reraise(tx, target)
                    continue
                index = _through_with_exit(tx, target, entry.depth, exc)
                if index is None:
                    return True  # the ``__exit__`` swallows it
                continue
            if names[1:2] == ["POP_TOP"]:
                return True  # a bare ``except:``
            found = _clauses(tx, target + 1, cls)
            if found is True or (seen and found is None):
                return True
            index = found if found is not None else target + 1  # no match / a ``finally`` body
        elif names[:3] == ["COPY", "POP_EXCEPT", "RERAISE"]:
            index = target + 2
        elif names[:2] == ["CALL_INTRINSIC_1", "RERAISE"] and _stop_iteration_wrapper(ins[target]):
            # NOTE(3.12): a generator's body is covered by a handler that turns a StopIteration
            # it lets out into a RuntimeError and lets any other exception out as it is
            if issubclass(cls, StopIteration):
                raise Unsupported("exception", "a StopIteration let out of a generator")
            return False
        elif names == ["LOAD_CONST", "STORE_FAST", "DELETE_FAST", "RERAISE"]:
            index = target + 3  # the cleanup of ``except ... as e``
        else:
            raise Unsupported("exception", f"unrecognised exception handler at {target}")
    raise Unsupported("exception", "exception handlers nested too deeply")


def _stop_iteration_wrapper(inst: Instr) -> bool:
    return getattr(inst.arg, "name", None) == "INTRINSIC_STOPITERATION_ERROR"


def _clauses(tx: Translator, pos: int, cls: type) -> bool | int | None:
    """Walk ``except`` clauses from ``pos``: True if one matches ``cls``, the index of the final
    ``RERAISE`` if none does, None if this is not a clause (a ``finally`` body)."""
    ins = tx.instructions
    for _ in range(64):
        values: list[Any] = []
        j = pos
        while ins[j].name != "CHECK_EXC_MATCH":
            if ins[j].name == "RERAISE" and not values:
                return j
            if not _evaluate(tx, ins[j], values):
                return None
            j += 1
        if not values or not _matches(cls, values[-1]):
            if ins[j + 1].name not in _JUMP_IF_FALSE:
                return None
            pos = tx.labels[ins[j + 1].arg]
            continue
        return True
    return None


_JUMP_IF_FALSE = ("POP_JUMP_IF_FALSE", "POP_JUMP_FORWARD_IF_FALSE")


def _evaluate(tx: Translator, inst: Instr, values: list[Any]) -> bool:
    """One instruction of an ``except`` clause's class expression, on real values."""
    name, arg = inst.name, inst.arg
    try:
        if name == "LOAD_GLOBAL":
            values.append(tx.load_global(arg[1] if isinstance(arg, tuple) else arg))
        elif name == "LOAD_FAST" and arg in tx.symbolic_locals:
            values.append(tx.symbolic_locals[arg])
        elif name == "LOAD_DEREF":
            load_deref(tx, inst)  # pushes the cell's value, guarded as the instruction would
            values.append(tx.pop())
        elif name == "LOAD_ATTR" and values:
            attr = arg[1] if isinstance(arg, tuple) else arg
            values[-1] = dispatch.getattr_(tx, values[-1], attr)
        elif name == "BUILD_TUPLE" and len(values) >= arg:
            items = values[len(values) - arg :]
            del values[len(values) - arg :]
            values.append(ConstantVariable(tuple(v.as_python_constant() for v in items)))
        else:
            return False
    except Unsupported:
        return False
    return True


def _matches(cls: type, expected: VariableTracker) -> bool:
    if not expected.is_python_constant():
        return False
    value = expected.as_python_constant()
    try:
        return issubclass(cls, value)
    except TypeError:
        return False


# -- raising -----------------------------------------------------------------------------------
def raise_traced(tx: Translator, exc: ExceptionVariable) -> None:
    """Raise ``exc`` at ``tx``'s current instruction: caught in the trace, or a graph break."""
    if will_be_caught(tx, exc):
        exc.raised = True
        raise TracedException(exc)
    raise Unsupported(
        "raise",
        f"the function raises {exc.cls.__name__} here",
        hint="an exception no traced handler catches is raised by CPython, after the graph",
    )


def traced_python_error(tx: Translator, error: Unsupported) -> TracedException | None:
    """A ``PythonError`` a traced handler catches, as the ``TracedException`` to raise."""
    if not isinstance(error, PythonError) or not is_simple_exception(type(error.exc)):
        return None
    try:
        args = [a.vt if isinstance(a, IdentityKey) else tx.fold(a) for a in error.exc.args]
        attrs = keyword_attributes(tx, error.exc)
        exc = ExceptionVariable(type(error.exc), args, attrs=attrs, raised=True)
        if not will_be_caught(tx, exc):
            return None
    except Unsupported:
        return None
    exc.set_context(_handled(tx))
    return TracedException(exc)


def catch(tx: Translator, index: int, exc: ExceptionVariable) -> bool:
    """Unwind ``tx`` to the handler covering instruction ``index``, with ``exc`` pushed; False if
    no handler of this frame covers it (the exception goes on to the caller)."""
    entry = _entry(tx, index)
    if entry is None:
        return False
    del tx.stack[entry.depth :]
    if entry.lasti:
        tx.push(ConstantVariable(index))  # only RERAISE 1 reads it (to set the frame's lasti)
    tx.push(exc)
    tx.ip = entry.target
    return True


# Throwing into a generator is unwinding its frame to a handler (``catch``), so its rule lives
# here: ``dispatch.throw``, which a ``@contextmanager``'s exit with an exception asks (its
# general rule, a break, is in ``variables/contexts.py``, imported with the package).
@dispatch.rule("throw", GeneratorVariable)
def throw_into_generator(tx: Translator, gen: GeneratorVariable, exc: VariableTracker) -> bool:
    """``gen.throw(exc)`` for a generator made in the trace, suspended at a ``yield``: ``exc``
    raised there, meeting the frame's handlers. True where the frame then returns, False where
    ``exc`` itself leaves it; yielding again or raising another exception breaks. The frame's
    state is kept in the side-effect log first, so a trial (``_exit_swallows``) undoes it."""
    frame = gen.frame
    at = frame.ip - 1 if frame is not None else -1
    if (
        gen.source is not None
        or not gen.given
        or gen.done
        or gen.index < len(gen.items)
        or not isinstance(exc, ExceptionVariable)
        or issubclass(exc.cls, (StopIteration, GeneratorExit))  # turned into RuntimeError...
        or frame.instructions[at].name != "YIELD_VALUE"
    ):
        raise Unsupported("generator", f"an exception thrown into {gen!r}")
    tx.output.side_effects.before_mutation(_SuspendedFrame(gen))
    if not catch(frame, at, exc):
        gen.done = True
        return False
    try:
        if gen.pull() is not None:
            raise Unsupported("python_error", "RuntimeError: generator didn't stop after throw()")
    except TracedException as e:
        if e.exc is exc:
            return False
        raise Unsupported("generator", f"{gen!r} raised another exception on a throw") from None
    gen.done = True
    return True


class _SuspendedFrame:
    """A generator's frame as it stands, for the side-effect log's undo (``save_state``,
    ``restore_state``): its position, stack and locals (changed in place: cells read them)."""

    source = None

    def __init__(self, gen: GeneratorVariable) -> None:
        self.gen = gen

    def save_state(self) -> tuple:
        gen, frame = self.gen, self.gen.frame
        kept = (gen.given, gen.done, gen.result, gen.spoiled)
        return frame.ip, list(frame.stack), dict(frame.symbolic_locals), kept

    def restore_state(self, state: tuple) -> None:
        gen, frame = self.gen, self.gen.frame
        frame.ip, stack, symbolic_locals, kept = state
        frame.stack[:] = stack
        frame.symbolic_locals.clear()
        frame.symbolic_locals.update(symbolic_locals)
        gen.given, gen.done, gen.result, gen.spoiled = kept


def _through_with_exit(
    tx: Translator, target: int, depth: int, exc: ExceptionVariable
) -> int | None:
    """``exc`` leaving a ``with`` block of ``tx`` whose handler starts at ``target``: None where the
    block's ``__exit__`` swallows it (returns a true value), else the index of the handler's
    ``RERAISE``, where the search goes on. A context whose exit cannot swallow it
    (``ContextVariable.exit_may_swallow``: grad mode, autocast, an ``__exit__`` returning only None
    or False) lets it through; any other ``__exit__`` is traced on a trial (``_exit_swallows``)."""
    exit_vt = _exit_below(tx, depth, target)
    ctx = getattr(exit_vt, "ctx", None)
    may_swallow = ctx.exit_may_swallow() if ctx is not None else True
    if may_swallow and _exit_swallows(tx, exit_vt, exc, target + 2):
        return None
    return _with_reraise(tx, target)


def _exit_below(tx: Translator, depth: int, target: int) -> VariableTracker:
    """The ``__exit__`` a ``with`` block's handler at ``target`` calls: on the stack, below the
    handler's depth."""
    exit_vt = tx.stack[depth - 1] if 0 < depth <= len(tx.stack) else None
    if exit_vt is None:
        raise Unsupported("exception", f"no __exit__ below the with-block handler at {target}")
    return exit_vt


def _exit_ignores_exception(tx: Translator, depth: int, target: int) -> bool:
    ctx = getattr(_exit_below(tx, depth, target), "ctx", None)
    return bool(getattr(ctx, "exit_ignores_exception", False))


def _with_reraise(tx: Translator, target: int) -> int:
    """The index of the ``RERAISE`` that lets an exception go on from a ``with`` block's handler
    at ``target`` once its ``__exit__`` has not swallowed it."""
    for i in range(target + 2, min(target + 8, len(tx.instructions))):
        inst = tx.instructions[i]
        if inst.name == "RERAISE" and inst.arg == 2:
            return i
    raise Unsupported("exception", f"unrecognised with-block cleanup at {target}")


def _exit_swallows(
    tx: Translator, exit_vt: VariableTracker, exc: ExceptionVariable, after: int
) -> bool:
    """Does ``exit_vt(type(exc), exc, exc.__traceback__)`` return a true value? Traced as its
    handler will trace it (``exc`` the exception being handled, the frame at its
    ``WITH_EXCEPT_START``, whose index ends before ``after``: an exception leaving ``__exit__``
    meets the handlers CPython's does), then undone: the graph, side effects, state and ``exc`` as
    they were, the frame's instruction and call in progress untouched. Anything the trace cannot
    follow there (a break in ``__exit__``, an exception leaving it, a result from tensor data) is a
    break at the raising instruction."""
    output = tx.output
    checkpoint = output.checkpoint()
    kept = (tx.ip, tx.direct_callee, tx.inlined_direct, exc.context, dict(exc.attrs))
    tx.ip = after
    output.exc_info.append(exc)
    try:
        result = dispatch.call(tx, exit_vt, exit_arguments(tx, exc), {})
        return dispatch.truth(tx, result)
    except Exception as e:  # Unsupported, the translator's GraphBreak carrying one, or a raise
        reason = e if isinstance(e, Unsupported) else getattr(e, "reason", None)
        if not isinstance(reason, Unsupported) and not isinstance(e, TracedException):
            raise
        raise Unsupported(
            "exception", f"the __exit__ an exception meets does not trace ({reason or 'it raises'})"
        ) from None
    finally:
        output.restore(checkpoint)
        tx.ip, tx.direct_callee, tx.inlined_direct, exc.context, exc.attrs = kept


def exit_arguments(tx: Translator, exc: ExceptionVariable) -> list[VariableTracker]:
    """What CPython gives a with-block's ``__exit__`` for ``exc``: its type, itself and its
    ``__traceback__``."""
    return [ConstantVariable(exc.python_type()), exc, dispatch.getattr_(tx, exc, "__traceback__")]


def to_exception(tx: Translator, value: VariableTracker) -> ExceptionVariable:
    """What ``raise value`` raises: an exception instance, or a class called with no arguments."""
    if isinstance(value, ExceptionVariable):
        return value
    if value.is_python_constant() and is_simple_exception(value.as_python_constant()):
        return ExceptionVariable(value.as_python_constant())
    raise Unsupported("raise", f"raising {value}")


# -- handler opcodes ---------------------------------------------------------------------------
@handler("RAISE_VARARGS")
def raise_varargs(tx: Translator, inst: Instr) -> None:
    """(exc? cause? --)  https://docs.python.org/3.11/library/dis.html#opcode-RAISE_VARARGS"""
    if inst.arg == 0:  # a bare ``raise``: the exception being handled
        if not tx.output.exc_info:
            raise Unsupported("raise", "a bare raise outside an exception handler")
        raise_traced(tx, tx.output.exc_info[-1])
    cause = tx.pop() if inst.arg == 2 else None
    exc = to_exception(tx, tx.pop())
    if cause is not None:
        exc.cause = (
            None
            if cause.is_python_constant() and cause.as_python_constant() is None
            else (to_exception(tx, cause))
        )
        exc.suppress_context = True
    exc.set_context(_handled(tx))
    raise_traced(tx, exc)


def _handled(tx: Translator) -> VariableTracker | None:
    """The exception being handled at ``tx``'s instruction, if any."""
    return tx.output.exc_info[-1] if tx.output.exc_info else None


@handler("RERAISE")
def reraise(tx: Translator, inst: Instr) -> None:
    """(lasti? exc --)  re-raise after a handler that did not catch (or a ``finally``)."""
    exc = tx.pop()
    if inst.arg:
        tx.pop()
    if not isinstance(exc, ExceptionVariable):
        raise Unsupported("raise", f"re-raising {exc}")
    raise_traced(tx, exc)


@handler("WITH_EXCEPT_START")
def with_except_start(tx: Translator, inst: Instr) -> None:
    """(exit lasti prev exc -- exit lasti prev exc result)  the block's ``__exit__`` with ``exc``"""
    exit_vt, exc = tx.stack[-4], tx.stack[-1]
    tx.push(dispatch.call(tx, exit_vt, exit_arguments(tx, exc), {}))


@handler("PUSH_EXC_INFO")
def push_exc_info(tx: Translator, inst: Instr) -> None:
    """(exc -- previous exc)  the handler starts: ``exc`` becomes the exception being handled."""
    exc = tx.pop()
    info = tx.output.exc_info
    tx.push(info[-1] if info else ConstantVariable(None))
    tx.push(exc)
    info.append(exc)


@handler("POP_EXCEPT")
def pop_except(tx: Translator, inst: Instr) -> None:
    """(previous --)  the handler ends: the previous exception is the one being handled again."""
    tx.pop()
    if tx.output.exc_info:
        tx.output.exc_info.pop()


@handler("CHECK_EXC_MATCH")
def check_exc_match(tx: Translator, inst: Instr) -> None:
    """(exc cls -- exc matched)"""
    expected = tx.pop()
    exc = tx.peek()
    if not expected.is_python_constant():
        raise Unsupported("exception", f"except clause on {expected}")
    tx.push(ConstantVariable(_matches(exc.python_type(), expected)))
