"""``OutputGraph``: owns the ``torch.fx.Graph`` being built, its inputs, guards and side effects.

Every tensor operation the translator sees becomes a node here, executed at the same time on fake
tensors (``FakeTensorMode``) so shapes, dtypes and devices are known. ``compile_graph`` closes the
graph over the tensors that must leave it and hands it to the backend.
"""

from __future__ import annotations

import functools
import operator
import traceback
import types
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
import torch.fx
from torch.fx.passes.runtime_assert import insert_deferred_runtime_asserts

from ..backends.graph_source import release_source_on_death
from ..backends.state_nodes import RUNTIME
from ..guards import kinds
from ..guards.guard import Fixed, Guard, TensorSpec
from ..guards.sources import (
    AttrSource,
    ConstSource,
    FreshSource,
    ItemSource,
    ModuleGlobalSource,
    ShapeExprSource,
    Source,
)
from . import effects, generator_draws
from .breaks import deferred_checks
from .breaks.deferred_checks import DeferredChecks
from .exc import Unsupported
from .fakes import eager_checks, fake_run
from .fakes.fake_reuse import FakeResults
from .fakes.shapes import DynamicPolicy, ShapeTracker, unbacked_symbols
from .global_state import GlobalStateLog
from .graph_naming import augmented_target, graph_constant, graph_target
from .side_effects import SideEffects
from .variables.base import VariableTracker
from .variables.constants import SYMBOLIC_TYPES, ConstantVariable, SymNodeVariable
from .variables.containers import ListVariable, TupleVariable
from .variables.tensors import TensorVariable

if TYPE_CHECKING:
    from .translator import Translator


def _holds_tensor(value: Any, seen: set[int]) -> bool:
    """Whether ``value`` is a tensor or holds one in a container or an object's attributes (what
    an op run on fake tensors gives back folded as a constant would hold)."""
    if isinstance(value, torch.Tensor):
        return True
    if id(value) in seen or isinstance(value, (type, types.ModuleType, types.FunctionType)):
        return False
    seen.add(id(value))
    if isinstance(value, dict):
        return any(_holds_tensor(v, seen) for v in (*value.keys(), *value.values()))
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_holds_tensor(v, seen) for v in value)
    attributes = getattr(value, "__dict__", None)
    return type(attributes) is dict and any(_holds_tensor(v, seen) for v in attributes.values())


#: Results of ops that are facts of the fake tensors' metadata (exact), folded to constants.
_CONSTANT_RESULTS = (
    int,
    float,
    bool,
    torch.Size,
    tuple,
    str,
    torch.dtype,
    torch.device,
    torch.layout,
    torch.memory_format,
)


class OutputGraph:
    """The graph of one trace (shared by the root translator and every inlined call)."""

    def __init__(
        self, root_tx: Translator | None = None, policy: DynamicPolicy | None = None
    ) -> None:
        self.graph = torch.fx.Graph()
        self.fake_mode = effects.ProbedFakeTensorMode()  # given a ShapeEnv once it needs one
        self.shapes = ShapeTracker(policy or DynamicPolicy(), self.fake_mode)
        self.fake_mode.allow_scalar_outputs = True  # ``t.item()`` -> an unbacked symbolic number
        self._last_placeholder: torch.fx.Node | None = None  #: see ``_placeholder``
        self.fake_results = FakeResults(self.fake_mode)  #: fake results reused by later calls
        self.has_unbacked = False  #: some node computes a number from tensor data
        #: bodies of torch.func transforms being traced, innermost last
        #: (``variables/functorch.py``, ``TransformBody``), whose tensors' autograd state is
        #: functorch's, not their fakes'
        self.transform_bodies: list[Any] = []
        self.inputs: dict[Source, VariableTracker] = {}  #: source -> placeholder variable
        self.input_values: list[Any] = []  #: real values of the placeholders, in order
        self.guards: set[Guard] = set()
        #: while a list: each guard asked for is appended (an lru_cache'd body's trace keeps
        #: those its result depends on, ``functions.MemoizedFunctionVariable``)
        self.guard_log: list[Guard] | None = None
        self._class_lacks: dict[Source, Guard] = {}  #: class -> its ``CLASS_ATTR_ABSENT`` guard
        self._keys_absent: set[tuple[Source, str]] = set()  #: see ``assume_key_absent``
        self.wrapped: dict[int, tuple[Any, VariableTracker]] = {}  #: id(value) -> (value, vt)
        #: id(key) -> (key, its ``DictKeySource``): the keys of input dicts and sets kept as
        #: themselves (compared by value: ``builder._wrap_key``), whose identity ``is`` may read
        self.key_sources: dict[int, tuple[Any, Source]] = {}
        #: id(an instance dict) -> (the dict, its object's tracker), for the objects wrapped
        #: (``builder._one_namespace``)
        self.namespaces: dict[int, tuple[dict, VariableTracker]] = {}
        self.wrapping: set[int] = set()  #: ids of the values ``builder.wrap`` is wrapping now
        #: id(value) -> (value, the tracker reading it without a tracker of its own): a list read
        #: through an iterator from where it stands (``iterators.ListRestIteratorVariable``),
        #: which ``builder.wrap`` asks to model it (``model_list``) before wrapping it
        self.read_through: dict[int, tuple[Any, VariableTracker]] = {}
        #: while true, ``builder.wrap`` guards a str or bytes input's value only when the trace
        #: reads it (``constants.LazyConstantVariable``): the items a resumed loop takes
        self.values_guarded_on_use = False
        #: inputs keyed by identity -> how many entries of ``wrapped`` they are guarded apart
        #: from (``containers._keep_apart``)
        self.kept_apart: dict[VariableTracker, int] = {}
        self.side_effects = SideEffects()
        self.state = GlobalStateLog()  #: global state changes (contexts entered, modes set)
        self.deferred = DeferredChecks()  #: checks on tensor data the rewritten code makes
        #: tensors whose text the rewritten code makes after the graph, with their state then
        self.text_reads: list[tuple[VariableTracker, tuple]] = []
        #: tensors standing for one of several objects, which one known when the graph runs
        #: (``operations.PickedTensorVariable``; ``check_picks``)
        self.picks: list[TensorVariable] = []
        #: ``torch._C._storage_id`` of each fake tensor an operator of the graph wrote into
        self.written_storages: set[int] = set()
        #: exceptions being handled by traced ``except``/``finally`` blocks, innermost last
        self.exc_info: list[VariableTracker] = []
        self.iterator_births: list[Any] = []  #: see ``iterator_rollback``
        self.created: list[
            torch.fx.Node
        ] = []  #: non-placeholder nodes in creation order (for restore)
        self.current_tx: Translator | None = root_tx
        #: modules the graph's ``get_attr`` nodes name (the subgraphs of higher-order ops)
        self.subgraphs: dict[str, torch.nn.Module] = {}
        self.add_guard(kinds.GRAD_MODE(None, torch.is_grad_enabled()))
        self.add_guard(kinds.DEFAULT_DTYPE(None, torch.get_default_dtype()))

    # -- inputs and guards -------------------------------------------------------------------------
    def add_guard(self, guard: Guard) -> None:
        if guard.source is not None and isinstance(guard.source.root, FreshSource):
            return  # an object built by the rewritten code itself: it holds by construction
        if guard.source is not None and isinstance(guard.source.root, ConstSource):
            if _fixed_by_constant(guard):
                return  # the rewritten code loads the value with LOAD_CONST: it cannot differ
            raise Unsupported(
                "const_guard",
                f"cannot guard {guard.source.expr}, reached from a constant",
                hint="pass the value as an argument or read it from the function's globals",
            )
        if self.guard_log is not None:
            self.guard_log.append(guard)
        self.guards.add(guard)

    # What the trace assumed of a value after ``builder.wrap`` took it in (a name it found missing,
    # an identity it compared, a length it read) or of global state: each is the guard of one kind.
    # Input guards are made where inputs enter (``builder.wrap``, ``add_input``); every other module
    # states its assumption here, so guards are made in few places.
    def assume_type(self, source: Source, cls: type) -> None:
        """``type(source) is cls``."""
        self.add_guard(kinds.TYPE_MATCH(source, cls))

    def assume_equal(self, source: Source, value: Any) -> None:
        """``source == value``, for a value of an exact builtin type (or one its type guards)."""
        self.add_guard(kinds.EQUALS_MATCH(source, value))

    def call_after(
        self, fn: Any, args: list[VariableTracker], writes: list[Any], what: str
    ) -> None:
        """``fn(*args)`` made by the compiled code after the graph (``SideEffects.call_after``),
        changing ``writes``, objects of the program's (a warnings log, a logging handler's
        buffer). A tracker the trace holds of one would keep its state before the call: then
        ``what`` (the call) runs in Python where it stands (``Unsupported``)."""
        for obj in writes:
            known = self.wrapped.get(id(obj))
            if known is not None and known[0] is obj:
                raise Unsupported(
                    "effect",
                    f"{what} changes a {type(obj).__name__} the trace has read",
                    hint=f"read it after the compiled function, or make {what} outside it",
                )
        self.side_effects.call_after(fn, args, writes)

    def assume_identity(self, source: Source, value: Any) -> None:
        """``source is value`` (held weakly)."""
        self.add_guard(kinds.ID_MATCH(source, value))

    def identity_assumed(self, source: Source, value: Any) -> bool:
        """Whether ``source is value`` is guarded already."""
        return kinds.ID_MATCH(source, value) in self.guards

    def assume_same(self, source: Source, other: Source) -> None:
        """``source is other``: two inputs the trace found to be one object."""
        self.add_guard(kinds.DUPLICATE_INPUT(source, other))

    def assume_distinct(self, source: Source, other: Source) -> None:
        """``source is not other``: two inputs the trace found to be different objects."""
        self.add_guard(kinds.DISTINCT_INPUT(source, other))

    def assume_len(self, source: Source, length: int) -> None:
        self.add_guard(kinds.LEN_MATCH(source, length))

    def assume_len_at_least(self, source: Source, length: int) -> None:
        self.add_guard(kinds.LEN_AT_LEAST(source, length))

    def assume_keys(self, source: Source, keys: tuple[Any, ...]) -> None:
        """The dict (or class namespace) at ``source`` has exactly ``keys``, in that order."""
        self.add_guard(kinds.DICT_KEYS(source, keys))

    def assume_key_absent(self, source: Source, key: str) -> None:
        """``key`` is not in the dict ``source`` (a global or an instance attribute that would
        shadow what the trace read). Each is made once (a builtin's name is asked for at every
        load): again only while ``guard_log`` records what a call's trace asks."""
        if self.guard_log is None and (source, key) in self._keys_absent:
            return
        self._keys_absent.add((source, key))
        self.add_guard(kinds.KEY_ABSENT(source, key))

    def assume_member_unshadowed(self, module: Source, name: str) -> None:
        """``name``, a member of the module ``module``, is no key of its ``__dict__``."""
        self.add_guard(kinds.MEMBER_UNSHADOWED(AttrSource(module, "__dict__"), name))

    def assume_key_present(self, source: Source, key: str) -> None:
        """``key`` is a key of the dict ``source`` (an instance attribute the trace found)."""
        self.add_guard(kinds.KEY_PRESENT(source, key))

    def assume_registry_entry(self, source: Source, key: Any, entry: Any) -> None:
        """``source.get(key) is entry`` (None: ``key`` absent) for the registry dict ``source``."""
        self.add_guard(kinds.REGISTRY_ENTRY(source, (key, entry)))

    def assume_attr_absent(self, source: Source, name: str) -> None:
        self.add_guard(kinds.ATTR_ABSENT(source, name))

    def assume_class_lacks(self, class_source: Source, names: tuple[str, ...]) -> None:
        """No class in the MRO of ``class_source`` defines any of ``names``: one guard per class,
        holding the names of all such assumptions (each call walks the MRO once)."""
        earlier = self._class_lacks.get(class_source)
        if earlier is not None:
            if set(names) <= set(earlier.arg):
                return
            self.guards.discard(earlier)
            names = tuple(dict.fromkeys((*earlier.arg, *names)))
        guard = self._class_lacks[class_source] = kinds.CLASS_ATTR_ABSENT(class_source, names)
        self.add_guard(guard)

    def assume_state(self, label: tuple, getter: Callable[[], Any], value: Any) -> None:
        """``getter()`` still returns ``value``: global state the trace read; ``label`` names it."""
        self.add_guard(kinds.GLOBAL_STATE(None, (label, getter, value)))

    def check_prologue_state(self, what: str) -> None:
        """The prologue (``SideEffects.prologue``) runs under the state the call started with:
        ``what`` the trace makes for it must be made under the same state (default dtype and
        device; a ``torch.device`` block of the trace is not entered for real while tracing: its
        device is the trace's)."""
        device = self.state.default_device() or torch.get_default_device()
        now = (torch.get_default_dtype(), str(device), torch.is_inference_mode_enabled())
        if now != self.side_effects.entry_state:
            raise Unsupported("new_object", f"{what} under a changed default dtype/device")

    def input_value(self, source: Source | None) -> Any:
        """The real value of the graph input read at ``source``; None where no input was."""
        for input_source, value in zip(self.inputs, self.input_values, strict=True):
            if input_source == source:
                return value
        return None

    def add_input(self, value: torch.Tensor, source: Source) -> TensorVariable:
        if source in self.inputs:
            return self.inputs[source]
        if value.layout is not torch.strided or value.is_nested or value.is_quantized:
            # Fake tensors do not carry what such layouts store (a sparse tensor's fake has
            # ``_nnz() == 0``): a value folded from one would be wrong.
            raise Unsupported(
                "tensor_layout",
                f"a {value.layout} tensor ({source.expr}) is not traced",
                hint="convert it with .to_dense() before the compiled function",
            )
        name = _placeholder_name(source)
        node = self._placeholder(name)
        dims = self.shapes.policy.tensor_dims(value, source)
        with warnings.catch_warnings():  # e.g. reading .grad of a non-leaf while converting
            warnings.simplefilter("ignore")
            fake = self.shapes.fake_tensor(value, source, dims)
        node.meta["example_value"] = fake
        node.meta["source"] = source.expr
        sizes = tuple(None if isinstance(s, torch.SymInt) else s for s in fake.shape)
        strides = tuple(None if isinstance(s, torch.SymInt) else s for s in fake.stride())
        spec = TensorSpec(
            type(value),
            value.dtype,
            value.device,
            value.requires_grad,
            sizes,
            strides,
            value.is_conj(),
            value.is_neg(),
        )
        self.add_guard(kinds.TENSOR_MATCH(source, spec))
        vt = TensorVariable(node, fake, type(value), source)
        self.inputs[source] = vt
        self.input_values.append(value)
        return vt

    def add_symbolic_number(self, value: int | float, source: Source) -> VariableTracker:
        """An int/float input traced symbolically: a ``SymInt``/``SymFloat`` placeholder (``l_n_``)
        fed with the real number."""
        if source in self.inputs:
            return self.inputs[source]
        node = self._placeholder(_placeholder_name(source))
        sym = self.shapes.symbolic_number(value, source)
        node.meta["example_value"] = sym
        vt = SymNodeVariable(node, sym, source)
        self.inputs[source] = vt
        self.input_values.append(value)
        return vt

    def storage_sharing_guards(self) -> list[Guard]:
        """Where the graph writes into a tensor input: which tensor inputs share storage, as
        they do now. A backend that functionalizes the graph (AOTAutograd) keeps a write to one
        input from another only where their fakes shared storage: a later call whose inputs
        share storage otherwise (``f(z[:3], z[1:])`` after ``f(x, y)``, or the reverse) would
        read stale values. One expression: the storages' count, and each group's members equal.
        """
        tensors = [
            (source, value)
            for (source, vt), value in zip(self.inputs.items(), self.input_values, strict=True)
            if isinstance(vt, TensorVariable)
            and not isinstance(source.root, (FreshSource, ConstSource))
        ]
        ids = [torch._C._storage_id(value) for _, value in tensors]
        if len(tensors) < 2 or self.written_storages.isdisjoint(
            torch._C._storage_id(self.inputs[source].example) for source, _ in tensors
        ):
            return []
        first: dict[int, int] = {}  # storage id -> index of its first tensor
        terms = []
        for i, storage in enumerate(ids):
            if storage in first:
                terms.append(f"{{0}}({{{first[storage] + 1}}}) == {{0}}({{{i + 1}}})")
            first.setdefault(storage, i)
        listed = ", ".join(f"{{{i + 1}}}" for i in range(len(tensors)))
        template = " and ".join([f"len(set(map({{0}}, ({listed},)))) == {len(first)}", *terms])
        storage_id = ModuleGlobalSource("torch._C", "_storage_id")
        shape = ShapeExprSource(template, (storage_id, *(source for source, _ in tensors)))
        return [kinds.SHAPE_EXPR(None, shape)]

    def example_inputs(self) -> list[Any]:
        """What the backend gets: real values, or the fake ones when the graph has symbolic sizes
        or numbers computed from tensor data (so a backend sees which sizes are dynamic, sharing one
        ShapeEnv, whose fake mode turns ``item()`` into unbacked symbols)."""
        if not self.shapes.used and not self.has_unbacked:
            return list(self.input_values)
        return [
            vt.example if isinstance(vt, TensorVariable) else vt.value
            for vt in self.inputs.values()
        ]

    def reorder_inputs(self, order: list[Source]) -> None:
        """Make ``order`` (a permutation of the inputs' sources) the graph's argument order."""
        values = dict(zip(self.inputs, self.input_values, strict=True))
        self.inputs = {source: self.inputs[source] for source in order}
        self.input_values = [values[source] for source in order]
        anchor = next(n for n in self.graph.nodes if n.op != "placeholder")
        for vt in self.inputs.values():
            anchor.prepend(vt.node)  # moves it: placeholders end up in ``order``, before the rest

    def _placeholder(self, name: str) -> torch.fx.Node:
        """A new placeholder after the others (found from the last one made, not by a walk over
        the graph: a trace adds hundreds of inputs, one per parameter)."""
        last = self._last_placeholder
        if last is None or last.next.op == "placeholder":  # none yet, or moved by reorder_inputs
            placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
            last = placeholders[-1] if placeholders else None
        if last is not None:
            with self.graph.inserting_after(last):
                node = self.graph.placeholder(name)
        else:
            with self.graph.inserting_before(next(iter(self.graph.nodes), None)):
                node = self.graph.placeholder(name)
        self._last_placeholder = node
        return node

    # -- operations --------------------------------------------------------------------------------
    def call_function(self, target: Any, args: tuple, kwargs: dict[str, Any]) -> VariableTracker:
        return self._create("call_function", target, args, kwargs)

    def call_method(self, name: str, args: tuple, kwargs: dict[str, Any]) -> VariableTracker:
        return self._create("call_method", name, args, kwargs)

    def call_effectful(self, target: Any, args: tuple, kwargs: dict[str, Any]) -> VariableTracker:
        """``call_function`` whose node every graph keeps although nothing reads its result (the
        copy an in-place collective writes back): marked here, as its result may be an operand's
        tracker, whose node is another."""
        return self._create("call_function", target, args, kwargs, effectful=True)

    def _create(
        self, op: str, target: Any, args: tuple, kwargs: dict[str, Any], effectful: bool = False
    ) -> VariableTracker:
        try:
            fake_args = tuple(fake_run.as_fake(a) for a in args)
            fake_kwargs = {k: fake_run.as_fake(v) for k, v in kwargs.items()}
        except Unsupported:
            if generator_draws.takes_generator(args, kwargs):  # ``generator=g``: no graph input
                return generator_draws.draw_before_graph(self, op, target, args, kwargs)
            raise
        eager_checks.check(op, target, fake_args, fake_kwargs)
        grad_before = _requires_grad(fake_args)
        called = target
        if op == "call_function":
            target = graph_target(augmented_target(target, fake_args[0] if args else None))
        node_args = tuple(_as_node_arg(a) for a in args)
        node_kwargs = {k: _as_node_arg(v) for k, v in kwargs.items()}
        reread = _reread(op, called, args, kwargs, (node_args, node_kwargs))
        probe = effects.EffectProbe()
        key = self.fake_results.key(op, target, fake_args, fake_kwargs)
        example = self.fake_results.replay(key, fake_args) if key is not None else None
        if example is None:
            grads = (
                effects.operand_grads((*fake_args, *fake_kwargs.values()))
                if isinstance(called, types.FunctionType)  # C operators never touch ``.grad``
                else []
            )
            example = self._run_fake(op, target, fake_args, fake_kwargs, probe)
            self.written_storages.update(torch._C._storage_id(w) for w in probe.written)
            if grads and effects.grads_changed(grads, probe):  # its body is traced instead
                raise effects.InlineInstead(
                    "effect", f"{_name(called)} changes the .grad of a tensor it is given"
                )
            if probe.legacy_collectives():  # never record a collective blindly
                raise Unsupported(
                    "collective", effects.describe(target, probe), hint=_COLLECTIVE_HINT
                )
            if probe.state_changed:  # nor a call changing global state (undone by the probe)
                raise Unsupported("effect", effects.describe(target, probe))
            if key is not None and not probe.effects and not probe.random:
                self.fake_results.remember(key, fake_args, fake_kwargs, example)
        _check_no_new_leaf(_name(target), example, grad_before)
        self._check_text_reads(_name(target), probe)
        self.check_picks(_name(target), probe.written, example)
        deferred_checks.note_op(self, _name(target), fake_args, fake_kwargs, probe)
        made = _untraced_layout(example)
        if made is not None:  # as for inputs (``add_input``): e.g. ``coalesce()``'s fake nnz is 0
            raise Unsupported(
                "tensor_layout", f"{_name(target)} makes a {made} tensor, which is not traced"
            )
        node = self.graph.create_node(op, target, node_args, node_kwargs)
        # Unbacked symbols the op made (``item()``) are defined by this node (for backends and the
        # runtime-assert pass, which look them up in ``unbacked_bindings``).
        bindings = fake_run.unbacked_bindings(self.shapes.shape_env, example)
        if bindings:
            node.meta["unbacked_bindings"] = bindings
        node.meta["stack_trace"] = self._stack_trace()
        self.created.append(node)
        if effectful:
            effects.mark_effectful(node)
        operands = (*args, *kwargs.values()), (*fake_args, *fake_kwargs.values())
        given = _given_back(example, *operands, probe.written)
        if given is not None:  # ``w -= g``, ``y = x.add_(1)``, ``out=``: the operand itself
            node.meta["example_value"] = example
            return given
        return self._wrap_result(node, example, probe, reread)

    def watch_text(self, tensor: VariableTracker) -> None:
        """``tensor``'s text is made after the graph (``TextVariable``): it must stay as it is now
        until then."""
        self.text_reads.append((tensor, _text_state(tensor.example)))

    def _check_text_reads(self, name: str, probe: effects.EffectProbe) -> None:
        """An operator that changed a tensor whose text waits for the graph (its data, shape or
        ``requires_grad``, which show in the text) ends the graph before it: the break makes the
        text first. An inference tensor counts no versions: there any operator writing into a
        tensor (inference mode on) counts as changing it."""
        for tensor, state in self.text_reads:
            untracked = tensor.example.is_inference() and probe.written
            if untracked or _text_state(tensor.example) != state:
                raise Unsupported(
                    "text", f"{name} changes {tensor}, whose text is made after the graph"
                )

    def check_picks(self, name: str, written: Any, example: Any) -> None:
        """An operator writing into a tensor picked at run time or into one it may be, or making
        a view of it, ends the graph before it: the pick's node is a copy, which the write would
        miss or the view would see; after the break the pick is the real object."""
        if not self.picks:
            return
        wrote = {torch._C._storage_id(w) for w in written}
        results = example if isinstance(example, (tuple, list)) else (example,)
        made = {_storage_of(r) for r in results if r is not None}
        for pick in self.picks:
            own = torch._C._storage_id(pick.example)
            views = own in made and not any(r is pick.example for r in results)
            objects = (pick.example, *pick.objects())
            if views or any(torch._C._storage_id(o) in wrote for o in objects):
                raise Unsupported(
                    "picked_tensor", f"{name} writes or views {pick}, an object known at run time"
                )

    def before_text_state_change(self, what: str) -> None:
        """``what`` changes torch's state that a tensor's text shows (the default dtype or
        device, which it names where the tensor's differ): called before the change, it ends the
        graph there while a text waits for the graph."""
        if self.text_reads:
            tensor = self.text_reads[0][0]
            raise Unsupported("text", f"{what} changes the text of {tensor}, made after the graph")

    def _run_fake(
        self, op: str, target: Any, args: tuple, kwargs: dict[str, Any], probe: Any
    ) -> Any:
        return fake_run.run(self.fake_mode, self.shapes, op, target, args, kwargs, probe)

    def _wrap_result(
        self,
        node: torch.fx.Node,
        example: Any,
        probe: effects.EffectProbe,
        reread: functools.partial | None = None,
    ) -> VariableTracker:
        if isinstance(example, torch.Tensor):
            node.meta["example_value"] = example
            return TensorVariable(node, example)
        if isinstance(example, SYMBOLIC_TYPES):
            node.meta["example_value"] = example
            self.has_unbacked = self.has_unbacked or bool(unbacked_symbols(example))
            return SymNodeVariable(node, example)
        if (
            isinstance(example, (tuple, list))
            and any(isinstance(e, SYMBOLIC_TYPES) for e in example)
            and not any(isinstance(e, torch.Tensor) for e in example)
        ):
            return self._symbolic_sequence(node, example)
        if isinstance(example, (tuple, list)) and any(isinstance(e, torch.Tensor) for e in example):
            node.meta["example_value"] = example
            items: list[VariableTracker] = []
            for i, e in enumerate(example):
                if isinstance(e, torch.Tensor):
                    item = self.graph.create_node("call_function", operator.getitem, (node, i), {})
                    self.created.append(item)
                    item.meta["example_value"] = e
                    item.meta["stack_trace"] = node.meta["stack_trace"]
                    items.append(TensorVariable(item, e))
                else:
                    items.append(self._constant_result(e))
            if isinstance(example, list):
                return ListVariable(items)
            return TupleVariable(items, cls=type(example) if type(example) is not tuple else tuple)
        if example is None or type(example) in _CONSTANT_RESULTS:
            # The one place a recorded call is erased; only a call proven pure is.
            verdict = effects.classify(node.op, node.target, example, probe)
            if verdict is effects.Verdict.GRAPH:
                effects.mark_effectful(node)  # e.g. an in-place store (``x[i] = v``)
                return self._constant_result(example)
            self.graph.erase_node(node)
            self.created.remove(node)
            if verdict is effects.Verdict.INLINE:
                raise effects.InlineInstead("effect", effects.describe(node.target, probe))
            if verdict is effects.Verdict.BREAK:
                raise Unsupported(
                    "effect",
                    effects.describe(node.target, probe),
                    hint="call it outside the compiled function",
                )
            if reread is not None:  # its value may come from global state: the guards ask again
                label = ("reread", _name(reread.func), repr(reread.args), repr(reread.keywords))
                self.assume_state(label, reread, example)
            return self._constant_result(example)
        raise Unsupported(
            "op_result", f"an op returned {type(example).__name__}, which is not traced"
        )

    def _symbolic_sequence(self, node: torch.fx.Node, example: Any) -> VariableTracker:
        """A size (or tuple) with symbolic entries: ``getitem`` nodes for those, constants for the
        rest."""
        node.meta["example_value"] = example
        items: list[VariableTracker] = []
        for i, e in enumerate(example):
            if isinstance(e, SYMBOLIC_TYPES):
                item = self.graph.create_node("call_function", operator.getitem, (node, i), {})
                self.created.append(item)
                item.meta["example_value"] = e
                items.append(SymNodeVariable(item, e))
            else:
                items.append(self._constant_result(e))
        return TupleVariable(items, is_size=isinstance(example, torch.Size))

    def _constant_result(self, value: Any) -> VariableTracker:
        if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            raise Unsupported("symbolic", "symbolic values are not traced yet")
        if isinstance(value, (tuple, torch.Size)):
            return TupleVariable(
                [self._constant_result(v) for v in value], is_size=isinstance(value, torch.Size)
            )
        if _holds_tensor(value, set()):  # a fake tensor must never become a constant
            raise Unsupported(
                "op_result",
                f"an op returned a {type(value).__name__} holding tensors, which is not traced",
            )
        return ConstantVariable(value)

    def _stack_trace(self) -> str:
        tx = self.current_tx
        frames = []
        while tx is not None:
            frames.append(tx.frame_summary())
            tx = tx.parent
        return _format_stack(tuple(reversed(frames)))

    # -- rolling back a partly traced instruction --------------------------------------------------
    def checkpoint(self) -> tuple:
        return (
            len(self.created),
            self.side_effects.snapshot(),
            self.state.checkpoint(),
            tuple(self.exc_info),  # the empty tuple, made once, in the usual case
            self.deferred.checkpoint(),
        )

    def restore(self, checkpoint: tuple) -> None:
        """Forget the nodes, side effects and state changes recorded since ``checkpoint`` (guards
        stay: more is safe)."""
        count, effects, state, exc_info, deferred = checkpoint
        self.deferred.restore(deferred)
        self.exc_info[:] = exc_info  # a callee broke inside its handler: that handler is undone
        for node in reversed(self.created[count:]):
            if not node.users:
                self.graph.erase_node(node)
        del self.created[count:]
        self.side_effects.restore(effects)
        self.state.restore(state)
        # the inputs read from the locals of prologue draws undone here: nothing sets those locals
        made = {entry[0] for entry in self.side_effects.prologue}
        for source in [s for s in self.inputs if generator_draws.undone(s, made)]:
            del self.input_values[list(self.inputs).index(source)]
            node = self.inputs.pop(source).node
            if self._last_placeholder is node:
                self._last_placeholder = None
            self.graph.erase_node(node)

    def state_node(self, fn: Any, args: tuple, runtime: bool = False) -> torch.fx.Node:
        """A node changing torch global state (``_set_grad_enabled``, ``enter_autocast``...): kept
        in the graph although nothing uses its result, and not counted as an op. ``runtime``: its
        effect only exists when it runs (``backends/state_nodes.py``)."""
        node = self.graph.call_function(fn, args)
        node.meta["bytegraph_state"] = True
        if runtime:
            node.meta[RUNTIME] = True
        node.meta["stack_trace"] = self._stack_trace()
        self.created.append(node)
        return node

    def run_fake(self, target: Any, args: list[Any]) -> Any:
        """``target(*args)`` on fake values, for a caller that makes the node itself (a
        higher-order call of a subgraph)."""
        return self._run_fake("call_function", target, tuple(args), {}, effects.EffectProbe())

    def add_subgraph(self, module: torch.nn.Module) -> str:
        """Make ``module`` an attribute of the graph module to come; its name there."""
        name = f"subgraph_{len(self.subgraphs)}"
        self.subgraphs[name] = module
        return name

    # -- finishing ---------------------------------------------------------------------------------
    def count_calls(self) -> int:
        """Operations in the graph (state changes are not: a graph of those alone is not
        compiled)."""
        return sum(
            1
            for n in self.graph.nodes
            if n.op.startswith("call_") and "bytegraph_state" not in n.meta
        )

    def graph_module(self, outputs: list[torch.fx.Node], name: str) -> torch.fx.GraphModule:
        # Effectful tensors nothing reads (an unused collective's result) leave the
        # graph too, after the outputs the code uses, so that no backend's partitioner drops them.
        unread = effects.unread_effects(self.graph, outputs)
        self.graph.output(tuple(outputs + unread))
        for node in reversed(list(self.graph.nodes)):  # drop unused shape arithmetic (pure)
            if (
                not node.users
                and node.op != "placeholder"
                and node.op != "output"
                and isinstance(node.meta.get("example_value"), SYMBOLIC_TYPES)
                and not effects.is_effectful(node)
            ):
                self.graph.erase_node(node)
        root = torch.nn.Module()
        for attr, module in self.subgraphs.items():
            root.add_module(attr, module)
        gm = torch.fx.GraphModule(root, self.graph, class_name=name)
        if self.shapes.shape_env is not None and self.shapes.shape_env.deferred_runtime_asserts:
            # What torch's shape checks assumed about numbers computed from tensor data (``0 <= u0``
            # for a size made from ``t.item()``) is checked where each number is computed.
            insert_deferred_runtime_asserts(gm, self.shapes.shape_env, name)
            gm.recompile()
        gm = release_source_on_death(gm)
        gm.meta = {"bytegraph_sources": [s.expr for s in self.inputs]}
        return gm


_COLLECTIVE_HINT = (
    "use the functional collectives (torch.distributed._functional_collectives) or the "
    "torch.distributed calls bytegraph rewrites (all_reduce, all_gather_into_tensor, ...)"
)

_IMMUTABLE = (
    tuple,
    frozenset,
    int,
    float,
    bool,
    str,
    bytes,
    complex,
    type(None),
    range,
    slice,
    torch.dtype,
    torch.device,
)


#: attributes that C declares read-only on objects that are otherwise not immutable: a builtin
#: function's ``__self__`` (``tuple.__new__.__self__`` is ``tuple``) and names; its
#: ``__module__`` can be set
_READ_ONLY_ATTRS = {
    types.BuiltinFunctionType: frozenset({"__self__", "__name__", "__qualname__"}),
}


def _fixed_by_constant(guard: Guard) -> bool:
    """Does ``guard`` hold by construction? Its source starts at a constant of the trace; when every
    container on the way is immutable (or the attribute read from it is read-only), the value's
    identity is fixed, and so is its content if it is immutable too (tensors excepted: their
    metadata can change in place)."""
    path = _path_values(guard.source)
    if path is None:
        return False
    *parents, value = path
    steps = _path_sources(guard.source)[1:]
    if not all(_fixed_step(p, step) for p, step in zip(parents, steps, strict=True)):
        return False
    fixed = guard.kind.fixed
    return fixed is Fixed.IDENTITY or (fixed is Fixed.VALUE and isinstance(value, _IMMUTABLE))


def _fixed_step(parent: Any, step: Source) -> bool:
    """Is the value ``step`` reads from ``parent`` always the same object?"""
    if isinstance(parent, _IMMUTABLE):
        return True
    read_only = _READ_ONLY_ATTRS.get(type(parent), frozenset())
    return isinstance(step, AttrSource) and step.attr in read_only


def _path_sources(source: Source) -> list[Source]:
    """The sources along ``source`` from its ``ConstSource`` root, the root first."""
    if isinstance(source, (AttrSource, ItemSource)):
        return [*_path_sources(source.base), source]
    return [source]


def _path_values(source: Source) -> list[Any] | None:
    """The objects read along ``source`` from its ``ConstSource`` root, or None if that fails."""
    if isinstance(source, ConstSource):
        return [source.value]
    base = _path_values(source.base) if isinstance(source, (AttrSource, ItemSource)) else None
    if base is None:
        return None
    try:
        last = (
            getattr(base[-1], source.attr)
            if isinstance(source, AttrSource)
            else base[-1][source.index]
        )
    except Exception:
        return None
    return [*base, last]


def _placeholder_name(source: Source) -> str:
    text = "".join(c if c.isalnum() else "_" for c in source.expr)
    while "__" in text:
        text = text.replace("__", "_")
    return text.strip("_").lower() + "_"


def _untraced_layout(example: Any) -> str | None:
    """The layout of a tensor in an op's result that the trace does not model (sparse, nested,
    quantized: fake tensors do not carry what those store), if any."""
    for t in example if isinstance(example, (tuple, list)) else (example,):
        if isinstance(t, torch.Tensor) and (
            t.layout is not torch.strided or t.is_nested or t.is_quantized
        ):
            return "nested" if t.is_nested else str(t.layout)
    return None


def _text_state(tensor: torch.Tensor) -> tuple:
    """What of a tensor its text shows and operators change in place: its version counter (shared
    by its views: data, shape and strides written; an inference tensor has none) and
    ``requires_grad``."""
    return None if tensor.is_inference() else tensor._version, tensor.requires_grad


def _storage_of(value: Any) -> int | None:
    """``torch._C._storage_id`` of a dense tensor, else None (no tensor, or no storage)."""
    if not isinstance(value, torch.Tensor) or value.layout is not torch.strided:
        return None
    try:
        return torch._C._storage_id(value)
    except (RuntimeError, NotImplementedError):  # a wrapper without storage (functorch's)
        return None


def _name(target: Any) -> str:
    return target if isinstance(target, str) else getattr(target, "__name__", str(target))


def _reread(
    op: str, target: Any, args: tuple, kwargs: dict[str, Any], node_args: Any
) -> functools.partial | None:
    """For a torch function called on constants only (``torch._C._get_cublas_allow_tf32()``,
    ``torch.get_num_threads()``): the call again, for a guard that its folded result still holds.
    Such a result depends on nothing the other guards check but global state, which the program
    may change between calls (``torch.backends.cuda.matmul.allow_tf32 = True``). ``node_args``
    (the graph node's arguments) tell constants from tensors and symbolic numbers, which are not
    asked for a value (that would specialise them)."""
    nodes: list[torch.fx.Node] = []
    torch.fx.node.map_arg(node_args, nodes.append)
    if op != "call_function" or nodes:
        return None
    return functools.partial(
        target,
        *(a.as_python_constant() for a in args),
        **{k: v.as_python_constant() for k, v in kwargs.items()},
    )


def _as_node_arg(vt: Any) -> Any:
    return fake_run.map_argument(vt, _node_leaf)


def _node_leaf(vt: Any) -> Any:
    if isinstance(vt, (TensorVariable, SymNodeVariable)):
        return vt.node
    if isinstance(vt, VariableTracker) and vt.is_python_constant():
        return graph_constant(vt.as_python_constant())
    raise Unsupported("graph_arg", f"{vt} cannot be passed to a graph op")


@functools.lru_cache(maxsize=256)
def _format_stack(frames: tuple[tuple[str, int, str], ...]) -> str:
    """``traceback.format_list`` of ``(filename, lineno, function)`` frames (with source lines),
    cached: the nodes made on one line share their stack, and reading source lines is slow. The
    stacks of one trace share their outer frames: each frame is formatted once (``_format_frame``),
    unless a frame repeats at once, which ``format_list`` folds into "[Previous line repeated]"."""
    if any(a == b for a, b in zip(frames, frames[1:], strict=False)):
        return "".join(traceback.format_list([traceback.FrameSummary(*f) for f in frames]))
    return "".join(map(_format_frame, frames))


@functools.lru_cache(maxsize=1024)
def _format_frame(frame: tuple[str, int, str]) -> str:
    return "".join(traceback.format_list([traceback.FrameSummary(*frame)]))


def _requires_grad(fake_args: tuple) -> dict[int, bool]:
    """``requires_grad`` of the tensors an operator is given, by identity, before it runs."""
    return {id(a): a.requires_grad for a in fake_args if isinstance(a, torch.Tensor)}


def _check_no_new_leaf(name: str, example: Any, grad_before: dict[int, bool]) -> None:
    """An operator whose result is an autograd leaf that requires grad and did not before
    (``torch.ones(3, requires_grad=True)``, ``t.requires_grad_()``) runs in Python: a graph that
    AOTAutograd compiles (aot_eager, inductor) gives that tensor back without the flag, and so
    whatever the graph computes from it, where eager and torch.compile keep it. ``is_leaf`` is
    read last: a view made under no_grad and then changed in place (``p[0].fill_(1)`` under
    no_grad) raises on reading it, in eager too."""
    if not isinstance(example, torch.Tensor) or not example.requires_grad:
        return
    if grad_before.get(id(example), False):
        return  # a leaf that required grad already, given back (``p.contiguous()``)
    if example._is_view() and example._base.requires_grad:
        return  # a view of such a leaf under no_grad (``p.reshape(...)``): its flag, inherited
    if not example.is_leaf:
        return
    raise Unsupported(
        "requires_grad",
        f"{name} makes a tensor that requires grad as an autograd leaf",
        hint="make it outside the compiled function, or pass it in",
    )


def _given_back(
    example: Any, args: tuple, fake_args: tuple, written: list[torch.Tensor]
) -> VariableTracker | None:
    """The tracker of the operand an operator wrote and gives back as its result (an in-place
    operator returns its tensor, ``out=`` the tensor it wrote): the same object, so the same
    tracker, with its class (an ``nn.Parameter`` stays one), its source (``.grad`` and attributes
    are read from the object) and what the trace stored on it. An operator returning an operand
    it did not write (``wait_tensor``) makes a node of its own, which later nodes read. An in-place
    foreach operator (``torch._foreach_mul_(params, 2.0)``) returns the list it was given, the
    same list object: that list's tracker."""
    if isinstance(example, list) and example:
        if not all(any(w is t for w in written) for t in example):
            return None
        for vt, fake in zip(args, fake_args, strict=True):
            if fake is example and isinstance(vt, ListVariable):
                return vt
        return None
    if not isinstance(example, torch.Tensor) or not any(w is example for w in written):
        return None
    for vt, fake in zip(args, fake_args, strict=True):
        if fake is example and isinstance(vt, TensorVariable):
            return vt
    return None
