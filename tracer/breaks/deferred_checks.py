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
        #: what a rerun would repeat that no input's version counter shows (an operator with
        #: effects outside its result, a module built before the graph); None while ``unsafe`` is
        #: at most a write into inputs (``written``)
        self.effectful: str | None = None
        #: the storages of the inputs the graph writes to
        self.written: frozenset[StorageWeakRef] = frozenset()
        #: the first operator that may raise on tensor data while side effects wait (``fallible``)
        self.fallible: str | None = None
        #: the first operator that may raise on tensor data (``note_prologue``)
        self.raising: str | None = None
        self.policy = speculation.Policy()  #: set by ``convert_call`` from the settings
        self.shadow: speculation.Shadow | None = None  #: made at the first speculated branch
        self.record: speculation.SiteRecord | None = None  #: set by ``finish``

    def checkpoint(self) -> tuple:
        # taken before every traced instruction: ``drawn``'s fields spelled out, with no call
        return (
            len(self.checks),
            self.unsafe,
            self.random,
            self.effectful,
            self.written,
            self.fallible,
            self.raising,
        )

    def restore(self, checkpoint: tuple) -> None:
        count, *drawn = checkpoint
        self.carry(tuple(drawn))
        del self.checks[count:]

    def drawn(self) -> tuple:
        """What the recorded operators did that a rerun or a raising graph must know of."""
        return self.unsafe, self.random, self.effectful, self.written, self.fallible, self.raising

    def carry(self, drawn: tuple) -> None:
        (self.unsafe, self.random, self.effectful, self.written, self.fallible, self.raising) = (
            drawn
        )

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
    so that the check guards a graph without it. An operator that may raise on tensor data while
    side effects wait breaks the graph before it when a raise there could not rerun the call
    (see "a graph that raises" below)."""
    deferred, flat = output.deferred, _flat((*args, *kwargs.values()))
    raising = may_raise_on_data(name, flat)
    if raising and deferred.raising is None:
        deferred.raising = name
    tx = output.current_tx
    handled = raising and tx is not None and tx.handler_runs(_DATA_ERRORS)
    waiting = "a try block's handler must see its error" if handled else _EFFECTS_WAIT
    if handled and (output.state.carried or _in_generator(tx)):
        _break_before(name, "where a raise cannot rerun the call", waiting)
    fallible = raising and (bool(output.side_effects) or handled)
    if fallible and deferred.unsafe is not None:
        if deferred.effectful is not None:
            _break_before(name, f"after {deferred.effectful}", waiting)
        if any(not _saved(vt.example) for vt in _written(output)):
            _break_before(name, f"after {deferred.unsafe}", waiting)
    written = _written_inputs(output, tuple(probe.written) or tuple(flat), probe)
    unsafe, effectful = _unsafe(output, name, flat, probe, written)
    if unsafe is not None:
        if effectful and deferred.fallible is not None:
            _break_before(name, f"after {deferred.fallible}, which may raise on tensor data")
        note_effect(output, unsafe, effectful=effectful)
        deferred.written |= written
    if fallible and deferred.fallible is None:
        deferred.fallible = name


def note_effect(output: OutputGraph, what: str, effectful: bool = True) -> None:
    """Something the rewritten code does before the graph runs (``what``: building a module the
    trace made, whose ``__init__`` may draw random numbers): a rerun would do it again, so it is
    unsafe like an effectful operator (``note_op``; ``effectful=False`` for a write into inputs,
    which their version counters show)."""
    deferred = output.deferred
    if deferred.checks:
        raise Unsupported(
            "deferred_check",
            f"{what}, after a check on tensor data deferred at {deferred.checks[0][1]}",
            hint="the graph ends before it, so that a failed check can rerun the call in Python",
        )
    if deferred.unsafe is None:
        deferred.unsafe = what
    if effectful and deferred.effectful is None:
        deferred.effectful = what


def note_prologue(output: OutputGraph, what: str) -> None:
    """Something with an effect (``what``: a draw from a generator, building a module that draws)
    that the rewritten code does before the graph runs, in place of where the trace met it: an
    operator recorded before it that may raise on tensor data would raise after it, where eager
    never got to it, so the graph ends before it instead."""
    raising = output.deferred.raising
    if raising is not None:
        raise Unsupported(
            "effect_order",
            f"{what} would happen before the graph, but after {raising}, which may raise on "
            "tensor data",
            hint="the graph ends before it, so that it happens only if the graph did not raise",
        )
    note_effect(output, what)


#: Operators torch counts as impure whose only effect is to raise on bad data (a factorization's
#: error check, an assert): running them again shows nothing.
_CHECKS_ONLY = frozenset(
    {
        "aten._linalg_check_errors.default",
        "aten._assert_async.default",
        "aten._assert_async.msg",
        "aten._assert_scalar.default",
        "aten._assert_tensor_metadata.default",
        "aten._functional_assert_async.msg",
        "aten._functional_assert_scalar.default",
    }
)


def _unsafe(
    output: OutputGraph,
    name: str,
    flat: list[Any],
    probe: EffectProbe,
    written: frozenset[StorageWeakRef],
) -> tuple[str | None, bool]:
    """What a rerun would repeat visibly, if anything, and whether it is more than a write into
    inputs (their version counters show a write, not the rest)."""
    if probe.random:
        if any(isinstance(a, torch.Generator) for a in flat):
            return f"{name} draws from a generator of its own", True
        output.deferred.random = True
    if any(kind != "mutation" and op not in _CHECKS_ONLY for kind, op in probe.effects):
        return f"{name} has effects outside its result", True
    if written:
        return f"{name} changes an input in place", False
    return None, False


def _written_inputs(
    output: OutputGraph, written: tuple, probe: EffectProbe
) -> frozenset[StorageWeakRef]:
    """The storages of graph inputs that an operator writes to (``written``: what its schemas
    say it wrote, else every argument), as an input or a view of one."""
    if not probe.kinds():
        return frozenset()
    inputs = _input_storages(output)
    return frozenset(
        ref
        for a in _flat(written)
        if isinstance(a, torch.Tensor) and (ref := StorageWeakRef(a.untyped_storage())) in inputs
    )


def _input_storages(output: OutputGraph) -> set[StorageWeakRef]:
    return {
        StorageWeakRef(vt.example.untyped_storage())
        for vt in output.inputs.values()
        if isinstance(vt, TensorVariable)
    }


class EffectsWait(Unsupported):
    """A break only because Python side effects wait for the graph, or a try block's handler must
    see what the operator raises (``note_op``): where the break can instead be taken at a caller's
    call that runs its callee as a compiled function of its own (a call in a try block,
    ``Translator.step``), the effects happen before that call, the handler is the caller's, run
    in Python, and the callee's own trace has neither."""


_EFFECTS_WAIT = "Python side effects wait for the graph"


def _break_before(name: str, after: str, waiting: str = _EFFECTS_WAIT) -> None:
    raise EffectsWait(
        "effect_order",
        f"{name} may raise on tensor data {after}, while {waiting}",
        hint="the graph ends before it, so that what comes before it happens if it raises",
    )


def _flat(values: Any) -> list[Any]:
    if isinstance(values, (tuple, list)):
        return [x for v in values for x in _flat(v)]
    return [values]


def _in_generator(tx: Translator) -> bool:
    return bool(tx.root.code.co_flags & _GENERATOR_FLAGS)


# -- a graph that raises -------------------------------------------------------------------------
# The same rerun serves a graph that raises when it runs (an index out of range, a kernel refusing
# what its fake kernel let through, ``x - True``): the side effects the trace recorded before the
# failing operation are replayed only after the graph, so raising out of it would lose them (a
# dict eager updated before the error stays empty). While nothing the graph did before it raised
# is visible, its error reruns the call in Python, which does those effects and raises at the
# failing line, as eager. A graph that writes into its inputs qualifies as long as it raised before
# its first write: the inputs' version counters tell (AOT backends write inputs back only at the
# end). So that a graph raising after a write (or after an operator with other effects) never has
# side effects waiting before the raising operator, ``note_op`` ends the graph before any operator
# that may raise on tensor data (``may_raise_on_data``) after a write while side effects wait, and
# before an effectful operator that follows such an operator. An operator that may raise on tensor
# data where a handler of the traced frames would run with its error (``exceptions.handler_runs``:
# an except clause, a finally, a user context's exit) is treated as one while side effects wait:
# raised out of the graph, the error would skip that handler, so the graph reruns the call, whose
# Python runs the handler as eager does.

#: Operators that raise on the values of their tensor arguments (an index out of range, a matrix
#: that is not invertible, bad probabilities), by name without leading or trailing underscores.
#: Indexing (``getitem``/``setitem``) and integer division qualify only with integer tensors.
_RAISE_ON_DATA = frozenset(
    {
        "index", "index_select", "index_add", "index_copy", "index_fill", "index_put",
        "index_reduce", "gather", "scatter", "scatter_add", "scatter_reduce", "take",
        "take_along_dim", "put", "embedding", "embedding_bag", "one_hot", "nll_loss",
        "nll_loss2d", "nll_loss_nd", "cross_entropy", "multi_margin_loss",
        "multilabel_margin_loss", "ctc_loss", "bincount", "multinomial", "repeat_interleave",
        "narrow", "narrow_copy", "max_unpool1d", "max_unpool2d", "max_unpool3d", "assert_async",
        "masked_scatter", "cholesky", "cholesky_solve", "cholesky_inverse", "inverse", "lu_solve",
        "triangular_solve", "segment_reduce",
    }
)  # fmt: skip
_INTEGER_ONLY = frozenset(
    {
        "div", "divide", "floor_divide", "floordiv", "rfloordiv", "remainder", "fmod", "mod",
        "rmod", "ifloordiv", "imod",
    }
)  # fmt: skip
#: Indexing raises on the data of an integer tensor in its index (not in what it indexes or stores).
_INDEXING = {"getitem": slice(1, None), "setitem": slice(1, -1)}


def may_raise_on_data(name: str, flat: list[Any]) -> bool:
    """May the operator ``name`` raise on the data of its arguments (``flat``: the fake ones)?"""
    bare = name.rsplit(".", 1)[-1].strip("_")
    if bare in _RAISE_ON_DATA or bare.startswith("linalg"):
        return True
    if bare in _INDEXING:
        return any(_integral(a) for a in flat[_INDEXING[bare]])
    return bare in _INTEGER_ONLY and any(_integral(a) for a in flat)


def _integral(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and not (
        value.dtype.is_floating_point or value.dtype.is_complex or value.dtype is torch.bool
    )


#: What an operator raises on bad tensor data: an index out of range (``IndexError``, or a
#: ``RuntimeError``, such as a device's assert), a failed factorization (``LinAlgError``, a
#: ``RuntimeError``), integer division by zero, bad probabilities. Never a builtin subclass of
#: ``RuntimeError`` such as ``NotImplementedError`` (a kernel missing for a device or dtype, which
#: the guards pin), so ``except NotImplementedError`` does not see it.
_DATA_ERRORS: tuple[type[BaseException], ...] = (
    IndexError,
    ValueError,
    ZeroDivisionError,
    RuntimeError,
)


def rerun_on_error(output: OutputGraph, code_flags: int) -> bool:
    """Should the graph's errors rerun the call: it has side effects waiting for it, or checks
    (an operator on the side the trace assumed may raise where eager takes the other side:
    ``t[i + 1]`` under ``if i == len(t) - 1``, an index that a deferred check refuses), or an
    operator that may raise on tensor data inside a try block whose handler would see the error
    (``exceptions.handler_runs``: raised out of the graph, it would skip the handler), and
    running it twice is invisible (as for a deferred check) unless the inputs' version counters
    show a write?"""
    return (
        bool(output.side_effects or output.deferred.checks or output.deferred.fallible)
        and output.deferred.effectful is None
        and not output.state.carried
        and not code_flags & _GENERATOR_FLAGS
    )


#: Inputs of at most this many elements that a graph with side effects writes into are copied
#: before each call, so that a raise after the write can put them back and rerun (a step counter
#: like a static KV cache's ``cumulative_length``); a larger one written before an operator that may
#: raise ends the graph before that operator instead.
SAVED_NUMEL = 4096


def _saved(example: torch.Tensor) -> bool:
    """Is ``example`` copied before each call (where its size is symbolic: not at trace time;
    ``RerunOnError`` decides on the tensor of each call)?"""
    numel = example.numel()
    return isinstance(numel, int) and numel <= SAVED_NUMEL and example.layout is torch.strided


def _written(output: OutputGraph) -> list[TensorVariable]:
    written = output.deferred.written
    return [
        vt
        for vt in output.inputs.values()
        if isinstance(vt, TensorVariable)
        and StorageWeakRef(vt.example.untyped_storage()) in written
    ]


def written_positions(output: OutputGraph) -> tuple[int, ...]:
    """The positions among the graph's inputs of those it writes into (as such or through a
    view)."""
    written = {id(vt) for vt in _written(output)}
    return tuple(i for i, vt in enumerate(output.inputs.values()) if id(vt) in written)


class RerunOnError:
    """A compiled graph whose exception becomes ``Rerun`` (after the default generators' states,
    if it draws from them, are put back), unless it wrote into an input it cannot put back before
    it raised. ``written``: the positions of the inputs it writes into; at each call the small ones
    (``SAVED_NUMEL``: decided on that call's tensors, whose sizes may be symbolic in the trace) are
    copied and put back, the others' version counters tell whether the graph got to them."""

    __slots__ = ("__name__", "fn", "random", "written")

    def __init__(self, fn: Any, name: str, random: bool, written: tuple[int, ...]) -> None:
        self.fn, self.__name__, self.random, self.written = fn, name, random, written

    def __call__(self, *args: Any) -> Any:
        state = save_rng() if self.random else None
        before = self._before(args) if self.written else None
        try:
            return self.fn(*args)
        except Exception:
            if self.written and not self._undone(args, before):
                raise  # it wrote into an input it cannot put back: running it again would show
            if state is not None:
                restore_rng(state)
            raise Rerun from None

    def _before(self, args: tuple) -> tuple | None:
        """``(position, version)`` of the large inputs written and ``(position, version, copy)``
        of the small ones (None if one is an inference tensor, which has no version counter)."""
        try:
            watched, copies = [], []
            for i in self.written:
                t = args[i]
                if t.layout is torch.strided and t.numel() <= SAVED_NUMEL:
                    copies.append((i, t._version, t.detach().clone()))
                else:
                    watched.append((i, t._version))
            return watched, copies
        except RuntimeError:
            return None

    def _undone(self, args: tuple, before: tuple | None) -> bool:
        """After a raise: did the graph write into no watched input, and are the saved ones it
        wrote into put back?"""
        if before is None:
            return False
        watched, copies = before
        try:
            if any(args[i]._version != version for i, version in watched):
                return False
            with torch.no_grad():
                for i, version, copy in copies:
                    if args[i]._version != version:
                        args[i].copy_(copy)
        except RuntimeError:  # an inference tensor written outside inference mode
            return False
        return True


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
