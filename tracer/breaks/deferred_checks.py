"""Deferred checks: a branch on tensor data whose other side only raises does not break the graph.

Code that validates tensors branches on their data only to refuse bad input: ``if not
valid.all(): raise ValueError(...)`` (torch.distributions' ``validate_args``, on every
distribution made and every ``log_prob``), ``assert (x >= 0).all()``, ``torch._assert(t, msg)``,
``if torch.isnan(loss).any(): raise``. The trace cannot know the data, so such a branch would be a
graph break (torch.compile breaks there). Instead, the trace assumes the side that goes on and
records the condition as a *check*: a boolean graph output. The rewritten code tests the checks
right after the graph returns, before anything the call does outside the graph (side effects are
replayed after it); when one fails, the entry runs the call again from its start as plain Python
(``Rerun``), which takes the raising side and raises exactly what eager raises, message included.
Any other branch on tensor data may be *speculated* on (``speculation.py``, when
``bytegraph.config.speculate`` is on): the trace takes the side this call's values take, and the
check is made the same way; a failed one is a miss, counted on its site.

Running the call twice is only invisible if the graph did nothing a second run would see, so a
check is deferred only while the graph mutates no input and runs no effectful operator
(``note_op``; an operator mutates an input when what its schema writes shares an input's storage):
once one of those is recorded, branches on tensor data break; once a check is pending,
such an operator breaks the graph before it instead (the check then guards a graph that does none
of them). Random draws from the default generators are allowed: a graph with checks and
random operators has the generators' states saved before it runs and put back before a rerun.
Which side "only raises" is a heuristic on the bytecode (``raises_only``); soundness does not
depend on it, since a failed check always reruns.
Contexts carried into a resume function (exited before its graph) and generator code are not
rerun: their branches break.

Entry points: ``assume`` (the conditional jumps), ``note_op`` (every recorded operator) and
``note_effect`` (what the rewritten code does before the graph: modules the trace made),
``finish`` and ``emit`` (``convert._finish``); ``Rerun`` (``exc.py``) is what the generated entry
catches.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

import torch
from bytecode import Label
from torch.multiprocessing.reductions import StorageWeakRef

from ..exc import Rerun, Unsupported
from ..variables.constants import ConstantVariable, SymNodeVariable
from ..variables.containers import ListVariable
from ..variables.tensors import TensorVariable
from . import speculation
from .speculation import restore_rng, save_rng

if TYPE_CHECKING:
    from bytecode import Instr

    from ...codegen.emit import Codegen
    from ..effects import EffectProbe
    from ..output_graph import OutputGraph
    from ..translator import Translator
    from ..variables.base import VariableTracker


#: How many instructions ``raises_only`` looks at before it gives up.
_SCAN_LIMIT = 400

_RETURNS = frozenset({"RETURN_VALUE", "RETURN_CONST", "YIELD_VALUE", "SEND", "RETURN_GENERATOR"})
_RAISES = frozenset({"RAISE_VARARGS", "RERAISE"})
_UNCONDITIONAL = frozenset({"JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP"})
_GENERATOR_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


class DeferredChecks:
    """The checks one trace deferred (``checks``: boolean nodes that hold on the traced path, where
    the branch was, and the speculation ``Site`` when the trace chose a side by the call's values),
    and, if any, the first recorded operator a rerun would repeat visibly (``unsafe``)."""

    def __init__(self) -> None:
        self.checks: list[tuple[TensorVariable, str, speculation.Site | None]] = []
        self.unsafe: str | None = None
        self.random = False  #: the graph draws from the default random generators
        self.policy = speculation.Policy()  #: set by ``convert_call`` from the settings
        self.shadow: speculation.Shadow | None = None  #: made at the first speculated branch
        self.record: speculation.SiteRecord | None = None  #: set by ``finish``

    def checkpoint(self) -> tuple[int, str | None, bool]:
        return len(self.checks), self.unsafe, self.random

    def restore(self, checkpoint: tuple[int, str | None, bool]) -> None:
        count, self.unsafe, self.random = checkpoint
        del self.checks[count:]

    def speculated(self) -> list[speculation.Site]:
        """The sites of the checks, each once, in the order first checked."""
        return list({s: None for _, _, s in self.checks if s is not None})


def assume(tx: Translator, value: VariableTracker, inst: Instr, jump_when: bool) -> bool | None:
    """The truth the trace assumes for a conditional jump on ``value`` (a one-element tensor, or a
    number computed from tensor data; the jump is taken when its truth is ``jump_when``), with its
    check recorded; None when the branch cannot be deferred (the caller breaks the graph as
    before). A side that only raises is a validation check: the trace takes the other. Otherwise
    the trace speculates (``speculation.py``): it takes the side the call's own values take."""
    output = tx.output
    if output.deferred.unsafe is not None or output.state.carried or _in_generator(tx):
        return None
    if not _one_value(value):
        return None  # ``bool()`` of it raises or needs a symbolic size: break, as eager decides
    target, next_index = tx.labels[inst.arg], tx.ip
    site = None
    if raises_only(tx, target):
        truth = not jump_when
    elif raises_only(tx, next_index):
        truth = jump_when
    else:
        site = _speculation_site(tx, inst)
        if site is None:
            return None
        if output.deferred.shadow is None:
            output.deferred.shadow = speculation.Shadow()
        truth = output.deferred.shadow.truth(output, value.node)
        if truth is None:
            return None
    if isinstance(value, SymNodeVariable):  # ``t.item() > 0``: the graph makes it a tensor
        dtype = ConstantVariable(torch.bool)
        value = output.call_function(torch.scalar_tensor, (value,), {"dtype": dtype})
    # a new tensor (never ``t`` itself, which a later in-place operation could change) whose
    # truth is that of the assumption: ``bool(t)`` is "nonzero" (NaN counts), as ``ne`` and
    # ``logical_not`` read it
    zero = ConstantVariable(0)
    holds = output.call_function(
        torch.ne if truth else torch.logical_not, (value, zero) if truth else (value,), {}
    )
    if value.example.dim() != 0:  # one element: the checks stack into one vector (``finish``)
        holds = output.call_function(torch.reshape, (holds, ConstantVariable(())), {})
    loc = tx.location()
    where = f"{loc.filename}:{loc.lineno}" if loc is not None else tx.code.co_name
    output.deferred.checks.append((holds, where, site))
    return truth


def _one_value(value: VariableTracker) -> bool:
    """Is ``value`` a one-element tensor or a number computed from tensor data (``t.item()``)?"""
    if isinstance(value, SymNodeVariable):
        return value.unbacked
    if not isinstance(value, TensorVariable):
        return False
    numel = value.example.numel()
    return isinstance(numel, int) and numel == 1


def _speculation_site(tx: Translator, inst: Instr) -> speculation.Site | None:
    """The site of the jump ``inst`` if the trace may speculate on it: speculation is on, the site
    has not missed too often, and this trace has not unrolled it ``unroll_limit`` times."""
    deferred = tx.output.deferred
    policy = deferred.policy
    if not policy.enabled:
        return None
    lineno = inst.lineno if inst.lineno is not None else tx.code.co_firstlineno
    site = speculation.site(tx.code, tx.ip - 1, lineno, policy.miss_limit)
    if site.disabled:
        return None
    if sum(1 for _, _, s in deferred.checks if s is site) >= policy.unroll_limit:
        return None
    return site


def raises_only(tx: Translator, start: int) -> bool:
    """Does every path from instruction ``start`` of ``tx``'s code end in a ``raise`` (no return,
    no loop, no yield) within ``_SCAN_LIMIT`` instructions?"""
    instructions, labels = tx.instructions, tx.labels
    todo, seen = [start], set()
    while todo:
        index = todo.pop()
        while True:
            if index in seen:
                break
            seen.add(index)
            if len(seen) > _SCAN_LIMIT or index >= len(instructions):
                return False
            inst = instructions[index]
            if inst.name in _RAISES:
                break
            if inst.name in _RETURNS or "BACKWARD" in inst.name or inst.name == "FOR_ITER":
                return False
            if isinstance(inst.arg, Label):
                target = labels[inst.arg]
                if target <= index:
                    return False
                if inst.name in _UNCONDITIONAL:
                    index = target
                    continue
                todo.append(target)
            index += 1
    return True


def note_op(
    output: OutputGraph, name: str, args: tuple, kwargs: dict[str, Any], probe: EffectProbe
) -> None:
    """Called for every operator about to be recorded (``args``: its fake arguments): remember the
    first one a rerun would repeat visibly, or, when a check is pending, break the graph before it
    so that the check guards a graph without it."""
    unsafe = _unsafe(output, name, (*args, *kwargs.values()), probe)
    if unsafe is not None:
        note_effect(output, unsafe)


def note_effect(output: OutputGraph, what: str) -> None:
    """Something the rewritten code does before the graph runs (``what``: building a module the
    trace made, whose ``__init__`` may draw random numbers): a rerun would do it again, so it is
    unsafe like an effectful operator (``note_op``)."""
    deferred = output.deferred
    if deferred.checks:
        raise Unsupported(
            "deferred_check",
            f"{what}, after a check on tensor data deferred at {deferred.checks[0][1]}",
            hint="the graph ends before it, so that a failed check can rerun the call in Python",
        )
    if deferred.unsafe is None:
        deferred.unsafe = what


def _unsafe(output: OutputGraph, name: str, args: tuple, probe: EffectProbe) -> str | None:
    if probe.random:
        if any(isinstance(a, torch.Generator) for a in _flat(args)):
            return f"{name} draws from a generator of its own"
        output.deferred.random = True
    kinds = probe.kinds()
    if kinds - {"mutation"}:
        return f"{name} has effects outside its result"
    # what its operators wrote to, where their schemas say (else any argument may have changed)
    if kinds and _touches_input(output, tuple(probe.written) or args):
        return f"{name} changes an input in place"
    return None


def _touches_input(output: OutputGraph, args: tuple) -> bool:
    """Does any tensor in ``args`` share its storage with a graph input (is one, or a view)?"""
    inputs = {
        StorageWeakRef(vt.example.untyped_storage())
        for vt in output.inputs.values()
        if isinstance(vt, TensorVariable)
    }
    return any(
        isinstance(a, torch.Tensor) and StorageWeakRef(a.untyped_storage()) in inputs
        for a in _flat(args)
    )


def _flat(values: Any) -> list[Any]:
    if isinstance(values, (tuple, list)):
        return [x for v in values for x in _flat(v)]
    return [values]


def _in_generator(tx: Translator) -> bool:
    return bool(tx.root.code.co_flags & _GENERATOR_FLAGS)


# -- a graph that raises -------------------------------------------------------------------------
# The same rerun serves a graph that raises when it runs (a kernel refusing what its fake kernel
# let through, ``x - True``): the side effects the trace recorded before the failing operation are
# replayed only after the graph, so raising out of it would lose them (a dict eager updated before
# the error stays empty). While the graph is safe to run twice, its error reruns the call in
# Python, which does those effects and raises at the failing line, as eager.


def rerun_on_error(output: OutputGraph, code_flags: int) -> bool:
    """Should the graph's errors rerun the call: it has side effects waiting for it, and running
    it twice is invisible (as for a deferred check)?"""
    return (
        bool(output.side_effects)
        and output.deferred.unsafe is None
        and not output.state.carried
        and not code_flags & _GENERATOR_FLAGS
    )


class RerunOnError:
    """A compiled graph whose exception becomes ``Rerun`` (after the default generators' states,
    if it draws from them, are put back)."""

    __slots__ = ("__name__", "fn", "random")

    def __init__(self, fn: Any, name: str, random: bool) -> None:
        self.fn, self.__name__, self.random = fn, name, random

    def __call__(self, *args: Any) -> Any:
        state = save_rng() if self.random else None
        try:
            return self.fn(*args)
        except Exception:
            if state is not None:
                restore_rng(state)
            raise Rerun from None


def finish(output: OutputGraph) -> list[TensorVariable]:
    """The graph outputs the checks need (none without checks): one boolean node that holds when
    every check does, then, if the trace speculated and made more than one check, the checks
    themselves as one vector (read on a miss, to count it where it happened). Each speculated site
    becomes a guard of the variant (``Site.speculating``)."""
    deferred = output.deferred
    deferred.shadow = None  # the real values it kept: the graph is done
    if not deferred.checks:
        return []
    checks = [check for check, _, _ in deferred.checks]
    sites = deferred.speculated()
    name = output.current_tx.code.co_name if output.current_tx is not None else "?"
    owners = [site for _, _, site in deferred.checks]
    deferred.record = speculation.SiteRecord(sites, owners, name) if sites else None
    for site in sites:
        site.variants += 1
        label = ("speculating", site.filename, site.lineno, site.index, site.code.co_name)
        output.assume_state(label, site.speculating, True)
    if len(checks) == 1:
        return checks
    vector = output.call_function(torch.stack, (ListVariable(checks),), {})
    holds = output.call_method("all", (vector,), {})
    return [holds, vector] if sites else [holds]


def emit_before(cg: Codegen, output: OutputGraph) -> None:
    """Before the graph call of a graph with checks and random draws: ``__bg_rng = save()``."""
    if output.deferred.random:
        cg.push_callable(lambda: cg.load_cell_value("__bg_rng_save", save_rng))
        cg.call(0)
        cg.store_local("__bg_rng")


def emit(cg: Codegen, output: OutputGraph, checked: list[TensorVariable]) -> None:
    """After the graph call: ``if not __graph_out[i]: [restore(__bg_rng)]; [record.missed(the
    checks)]; raise Rerun``, else ``[record.hit()]``."""
    ok, record = Label(), output.deferred.record
    cg.load_graph_output(checked[0].node)
    cg.pop_jump_if_true(ok)
    if output.deferred.random:
        cg.push_callable(lambda: cg.load_cell_value("__bg_rng_restore", restore_rng))
        cg.load_local("__bg_rng")
        cg.call(1)
        cg.pop_top()
    if record is not None:
        cg.push_callable(lambda: cg.load_cell_value("__bg_missed", record.missed))
        cg.load_graph_output(checked[-1].node)
        cg.call(1)
        cg.pop_top()
    cg.load_cell_value("__bg_rerun", Rerun)
    cg.add("RAISE_VARARGS", 1)
    cg.label(ok)
    if record is not None:
        cg.push_callable(lambda: cg.load_cell_value("__bg_hit", record.hit))
        cg.call(0)
        cg.pop_top()
