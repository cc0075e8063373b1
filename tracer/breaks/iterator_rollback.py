"""Breaks taken where a generator that cannot be rebuilt was made.

A generator made in the trace (a generator expression, a user generator function's, a polyfilled
``itertools`` object such as ``chain`` or ``product``) is a suspended frame: at a graph break,
rewritten code cannot rebuild it half-consumed (its remaining items may read what the break
changes). When such a generator is live at a break, the break is taken at the instruction that
made it instead, rolled back like a partly run instruction: that instruction runs in Python and
makes the real generator, which the resume function receives. What came before still compiles;
without this the whole call ran in Python (torch.compile skips such frames too). The frame that
made it may be the root frame or a callee still running when the break comes (``sum(f(t) for t in
xs)`` in a helper whose ``f`` breaks a few calls deeper): the callee's frame is then rolled back,
and its callers resume after their calls as for any break in a callee. (``map``/``zip``/
``filter`` and container iterators are rebuilt as they are: ``iterators.wrap_input_iterator``,
``continuation``.)

The translator notes each such iterator when an instruction of any frame leaves it on the stack
(``note``), and keeps every checkpoint taken since restorable while the root frame holds one
(``pending``): rolling back needs the undo log that ``SideEffects.commit`` would drop. A callee's
checkpoints all fall within one instruction of the root frame, which commits nothing before it
ends; then that callee has returned, and its births are dropped.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..exc import Unsupported
from ..variables import iterators
from ..variables.iterators import GeneratorVariable
from .break_frames import live_values

if TYPE_CHECKING:
    from ..translator import FrameState, Translator


@dataclass(eq=False)
class Birth:
    """Where a frame made ``iterator``: the instruction and the state before it."""

    iterator: GeneratorVariable
    index: int
    saved: tuple
    tx: Any = None  #: the Translator of the frame that made it


def unfinished(vt: Any) -> bool:
    """A generator made in the trace that may not be rebuildable at some break: it has items
    left (once done, it is rebuilt as its items). One made again from its state (an endless
    ``count``, a sequence iterator) is too, as an undone instruction may yet spoil it."""
    if not isinstance(vt, GeneratorVariable) or vt.source is not None:
        return False  # not one, or the caller's own object
    return not vt.rebuildable()


def unrebuildable(vt: Any) -> bool:
    """One that rewritten code could not rebuild at a break now (``GeneratorVariable.reconstruct``
    would raise): unfinished, started (one that has not is made again by a fresh call), and not
    made again from its state."""
    return unfinished(vt) and not iterators.restartable(vt) and not vt.escapes_as_is()


def note(tx: Translator, index: int, saved: tuple) -> None:
    """After instruction ``index`` of ``tx`` ran: remember a generator it left on the stack."""
    top = tx.stack[-1] if tx.stack else None
    # asked after every instruction: the usual answer (no generator on top) first, at least cost
    if not isinstance(top, GeneratorVariable) or _suspends(tx):
        return  # a generator's own frame is not rolled back (it outlives its consumer's step)
    births: list[Birth] = tx.output.iterator_births
    # a callee that made it and returned it (a polyfill's ``return _filterfalse(...)``) left its
    # own birth, dropped once the callee is gone: the caller that now holds it records its own
    if unfinished(top) and not any(b.iterator is top and b.tx is tx for b in births):
        births.append(Birth(top, index, tx.complete(saved), tx))


def _suspends(tx: Translator) -> bool:
    return bool(tx.code.co_flags & _SUSPENDING)


_SUSPENDING = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


def pending(tx: Translator) -> bool:
    """Could a break still roll back to a generator's birth (so nothing may be committed)? Only
    for one the root frame still holds on its stack or in a local: one it let go of (a
    ``next(self.parameters())`` probe) would otherwise keep every later undo record alive. One
    held elsewhere (in a list, an attribute) is then not rolled back to: at a break where it is
    live, the call runs in Python."""
    births: list[Birth] = tx.output.iterator_births
    if not births:  # asked after every root instruction: the usual answer, at no cost
        return False
    held = {id(vt) for vt in tx.stack} | {id(vt) for vt in tx.symbolic_locals.values()}
    births[:] = [
        b for b in births if b.tx is tx and unfinished(b.iterator) and id(b.iterator) in held
    ]
    return bool(births)


def rollback(tx: Translator, frames: list[FrameState], reason: Unsupported) -> Any:
    """The ``GraphBreak`` at the birth, in ``tx``'s frame, of the first iterator live in
    ``frames`` that cannot be rebuilt, or None when there is none (the break stays where it
    is)."""
    births: list[Birth] = [b for b in tx.output.iterator_births if b.tx is tx]
    if not births:
        return None
    live = {id(vt) for vt in iterators.walk_live(live_values(frames))}
    birth = next((b for b in births if id(b.iterator) in live and unrebuildable(b.iterator)), None)
    if birth is None:
        return None
    # made again, for real, by the instruction now in Python, as is every later one
    everyone: list[Birth] = tx.output.iterator_births
    del everyone[everyone.index(birth) :]
    moved = Unsupported(
        reason.kind,
        f"{reason.detail}; taken where {birth.iterator!r} was made, which cannot be rebuilt at "
        "the break",
        hint=reason.hint,
    )
    moved.strict = reason.strict
    return tx.break_at(birth.index, birth.saved, moved)
