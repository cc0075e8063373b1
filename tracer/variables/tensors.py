"""Tensors in the graph: ``TensorVariable`` (an FX node and its fake example value), its
attributes and methods (``call_method``: a graph node, or folded metadata), and what turns a tensor
into a Python value (``to_scalar``, ``to_bool``: a graph break, or a deferred check, where the
value is data). Operators on tensors are ``operations.py``'s; NumPy arrays are
``numpy_arrays.py``'s.
"""

from __future__ import annotations

import inspect
import operator
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
import torch.fx

from ...backends.state_nodes import RUNTIME
from ...guards.sources import AttrSource, CallSource, Source, TypeSource
from ..exc import PythonError, Unsupported
from . import dispatch
from .base import (
    MISSING,
    BoundAttributeVariable,
    MethodCallVariable,
    VariableTracker,
    type_lookup,
)
from .constants import ConstantVariable, TextPiece, TextVariable, unstored_dict

if TYPE_CHECKING:
    from ...codegen.emit import Codegen
    from ..translator import Translator


# ``TensorVariable``: a tensor in the graph (an FX node plus its fake value for
# shapes/dtypes/devices).
#
# Metadata reads (``shape``, ``dtype``, ``ndim``...) are answered from the fake value, as constants;
# method calls become ``call_method`` nodes; ``item()``/``int(t)``/``float(t)`` become unbacked
# symbolic numbers; other conversions to Python values (``tolist``, ``bool(t)``) are graph breaks.
# ``TensorMethodVariable`` is ``t.relu`` before it is called; ``TensorTruthVariable`` is ``bool(t)``
# that a conditional jump is about to read (3.13).

#: Attributes answered from the fake tensor as constants.
CONSTANT_ATTRS = frozenset(
    {
        "dtype",
        "device",
        "ndim",
        "is_cuda",
        "is_cpu",
        "is_sparse",
        "is_quantized",
        "is_meta",
        "layout",
        "requires_grad",
        "is_leaf",
        "is_floating_point",
        "is_complex",
        "is_contiguous",
        "is_nested",
        "itemsize",
        # the other device kinds and layouts: functions of the device and layout the guards pin
        "is_ipu",
        "is_maia",
        "is_mkldnn",
        "is_mps",
        "is_mtia",
        "is_sparse_csr",
        "is_vulkan",
        "is_xla",
        "is_xpu",
        "name",  # of a tensor without named dimensions (torch traces no named tensors): None
        "nbytes",
    }
)
#: Attributes telling a tensor's autograd state.
AUTOGRAD_ATTRS = frozenset({"requires_grad", "is_leaf", "grad_fn", "grad", "_base"})
#: Attributes that are tensors computed from the tensor: recorded as ``getattr`` nodes.
TENSOR_ATTRS = frozenset({"T", "mT", "H", "mH", "real", "imag"})
#: Methods that turn a tensor into Python data: the graph must break there.
TO_PYTHON = frozenset({"tolist", "numpy", "__bool__"})
#: Conversions to one Python number: traced as an unbacked symbolic number (``to_scalar``).
SCALAR_METHODS = frozenset({"item", "__int__", "__float__", "__index__"})
#: Methods with effects outside the graph or unknown to fake tensors.
UNSUPPORTED_METHODS = frozenset(
    {
        "backward",
        "register_hook",
        "retain_grad",
        "storage",
        "share_memory_",
        "pin_memory",
        "record_stream",
        "__repr__",
        "__str__",
        "__format__",
        "__setstate__",
        "__reduce_ex__",
        "__array__",
        "__dlpack__",
        "set_",
        "is_set_to",  # whether two tensors are one view of one storage: the fakes cannot say
        "resize_",
        "_version",
    }
)
#: Questions about a tensor that its fake cannot answer for the real one, nor the tensor guards
#: pin: its storage's state (``share_memory_`` or ``pin_memory`` made it, or a base's), whether
#: it was made in inference mode, whether it views another tensor, and (an attribute) whether
#: autograd made it. An input's answer is read from the real tensor and guarded
#: (``_real_answer``); another tensor's breaks, as its answer may come from an input it views,
#: or where ``MADE_FROM_INPUTS``, is its fake's.
INPUT_QUERIES = frozenset({"is_shared", "is_pinned", "is_inference", "is_leaf", "_is_view"})
#: ``INPUT_QUERIES`` whose answer for a tensor the graph makes is its fake's, which follows the
#: inputs' answers (a view of a view input; ``contiguous()`` of one, itself) and the global state
#: the trace ran under (inference mode): the inputs' answers are guarded (``_answer_of_made``).
MADE_FROM_INPUTS = frozenset({"is_inference", "_is_view"})
#: Methods giving where a tensor's data lies (``DataPtrVariable``).
POINTER_METHODS = frozenset({"data_ptr", "untyped_storage"})
#: Methods whose result is a Python value derived from metadata only.
METADATA_METHODS = frozenset(
    {
        "size",
        "dim",
        "ndimension",
        "numel",
        "nelement",
        "stride",
        "is_contiguous",
        "is_floating_point",
        "is_complex",
        "element_size",
        "get_device",
        "storage_offset",
        "type",
        "is_signed",
    }
)


def _answer_of_made(tx: Translator, tensor: TensorVariable, name: str) -> VariableTracker:
    """``MADE_FROM_INPUTS``' ``name()`` of a tensor the graph makes: its fake's answer, which
    follows the global state the trace ran under (guarded with it) and the inputs it was made
    from, whose answers are read from the real tensors and guarded."""
    for vt in tx.output.inputs.values():
        if isinstance(vt, TensorVariable) and vt.source is not None:
            real = tx.output.input_value(vt.source)
            if (
                not isinstance(real, torch.Tensor)
                or getattr(real, name)() != getattr(vt.example, name)()
            ):
                raise Unsupported("tensor_method", f"Tensor.{name}() of {tensor}")
            source = CallSource(AttrSource(vt.source, name))
            tx.output.assume_equal(source, getattr(real, name)())
    return ConstantVariable(getattr(tensor.example, name)())


def _guard_storage_offsets(tx: Translator, tensor: TensorVariable) -> None:
    """``tensor.storage_offset()`` folded to its fake's: the tensor guards pin sizes and strides,
    not where a tensor starts in its storage (``base[3:8]`` after ``base[:5]``), so the offset of
    each input whose storage ``tensor`` shares (itself, or the input it views) is guarded as it
    is now."""
    try:
        storage = torch._C._storage_id(tensor.example)
    except (RuntimeError, NotImplementedError) as e:  # no storage (a functorch transform's)
        raise Unsupported("tensor_method", f"Tensor.storage_offset() of {tensor}") from e
    for (source, vt), real in zip(tx.output.inputs.items(), tx.output.input_values, strict=True):
        if isinstance(vt, TensorVariable) and torch._C._storage_id(vt.example) == storage:
            offset = CallSource(AttrSource(source, "storage_offset"))
            tx.output.assume_equal(offset, real.storage_offset())


def _detached_in_place(tx: Translator, tensor: TensorVariable) -> bool:
    """Has the graph so far detached ``tensor`` in place (``t.detach_()``)? Its fake then answers
    for it (a leaf now), whatever the real one was given as."""
    return any(
        node.target in ("detach_", torch.Tensor.detach_, torch.detach_)
        and node.args[:1] == (tensor.node,)
        for node in tx.output.graph.nodes
        if node.op in ("call_method", "call_function")
    )


def _turns_grad_off(
    tensor: VariableTracker, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> bool:
    """``tensor.requires_grad_(flag)`` with a constant false ``flag`` on a tensor that requires
    grad now."""
    flag = args[0] if args else kwargs.get("requires_grad")
    if flag is None or not flag.is_python_constant() or flag.as_python_constant():
        return False
    example = getattr(tensor, "example", None)
    return isinstance(example, torch.Tensor) and example.requires_grad


def _stored_grad(tx: Translator, source: Source) -> VariableTracker | None:
    """What the trace stored into ``.grad`` of the input at ``source`` (through any tracker)."""
    for obj, name, value in tx.output.side_effects.attr_stores.values():
        if name == "grad" and isinstance(obj, TensorVariable) and obj.source == source:
            return value
    return None


@dataclass(eq=False)
class TensorVariable(VariableTracker):
    node: torch.fx.Node
    example: Any  #: the fake tensor this node produces at trace time
    cls: type = torch.Tensor  #: the real class (``torch.Tensor`` or ``nn.Parameter``...)
    source: Source | None = None

    def python_type(self) -> type:
        return self.cls

    def objects(self) -> list[Any]:
        """The fake tensors of the objects this tracker may stand for: its own; several where
        which one is known only at run time (``operations.PickedTensorVariable``)."""
        return [self.example]

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if name in AUTOGRAD_ATTRS and tx.output.transform_bodies:
            # functorch's autograd state of the innermost transform's body: a constant, or None
            # where it is the tensor's own (``functorch.TransformBody``)
            found = tx.output.transform_bodies[-1].autograd_attr(tx, self, name)
            if found is not None:
                return found
        if name == "is_leaf" and self.source is not None and not _detached_in_place(tx, self):
            return self._real_answer(tx, name, AttrSource(self.source, name))
        if name in ("shape",):
            if _has_symbols(self.example.shape):  # dynamic: read the sizes in the graph
                return tx.output.call_method("size", (self,), {})
            return tx.fold(tuple(self.example.shape)).clone(is_size=True)
        if name in CONSTANT_ATTRS:
            value = getattr(self.example, name)
            if _has_symbols(value):  # ``nbytes`` of symbolic sizes
                raise Unsupported("tensor_attr", f"Tensor.{name} of a tensor with symbolic sizes")
            return (
                ConstantVariable(value) if not callable(value) else TensorMethodVariable(self, name)
            )
        if name in TENSOR_ATTRS:
            return tx.output.call_function(getattr, (self, ConstantVariable(name)), {})
        if name == "grad":
            return self._grad(tx)
        if name == "__class__":  # ``type(x)``: ``x.__class__.__name__``
            return tx.wrap_static(self.python_type())
        if name == "data":  # ``.detach()`` but for its version counter, its own (not shared)
            return tx.output.call_function(torch._C._autograd._get_data_attr, (self,), {})
        if name == "grad_fn" and not self.example.requires_grad:
            return ConstantVariable(None)  # no autograd history without requires_grad
        if name in ("_base", "grad_fn"):
            raise Unsupported(
                "tensor_attr",
                f"Tensor.{name} is not traced",
                hint=f"read .{name} outside the compiled function",
            )
        if name == "__dict__" and self.source is not None:
            real = tx.output.input_value(self.source)
            if isinstance(real, torch.Tensor):  # an input's own attributes, as a guarded dict
                return unstored_dict(tx, self, real, self.source)
        # found on the classes of the tensor's MRO, not on their metaclass (``Tensor.__name__``
        # is no attribute of a tensor)
        static = type_lookup(torch.Tensor, name)
        if static is MISSING:
            if type_lookup(self.cls, name) is not MISSING:  # a subclass's own attribute
                raise Unsupported("getattr", f"{self.cls.__name__}.{name} is not traced")
            return self._own_attribute(tx, name)
        if type(static) in (str, int, float, bool, type(None)):  # ``t.__module__``: class data
            return ConstantVariable(static)
        return TensorMethodVariable(self, name)

    def _real_answer(self, tx: Translator, name: str, source: Source) -> VariableTracker:
        """``INPUT_QUERIES``' ``name`` of an input: the real tensor's answer at ``source``,
        guarded (a later call may pass a tensor shared, pinned, made in inference mode or by
        autograd, with the same metadata)."""
        real = tx.output.input_value(self.source)
        if not isinstance(real, torch.Tensor) or self.python_type() not in (
            torch.Tensor,
            torch.nn.Parameter,
        ):
            raise Unsupported("tensor_method", f"Tensor.{name} of {self}")
        value = getattr(real, name)
        value = value() if callable(value) else value
        tx.output.assume_equal(source, value)
        return ConstantVariable(value)

    def _own_attribute(self, tx: Translator, name: str) -> VariableTracker:
        """``t.name`` that the tensor's class lacks: of an input, the attribute in its own
        ``__dict__``, or CPython's ``AttributeError`` (both guarded)."""
        effects = tx.output.side_effects
        stored = effects.load_attr(self, name)
        if stored is not None:  # set earlier in the trace
            return stored
        if effects.is_deleted(self, name):
            message = f"'{self.cls.__name__}' object has no attribute '{name}'"
            raise PythonError(AttributeError(message))
        real = tx.output.input_value(self.source)
        if not isinstance(real, torch.Tensor) or "__getattr__" in dir(self.cls):
            raise Unsupported("getattr", f"Tensor has no attribute {name!r}")
        tx.output.assume_class_lacks(TypeSource(self.source), (name, "__getattr__"))
        if name in vars(real):
            return tx.wrap(vars(real)[name], AttrSource(self.source, name))
        tx.output.assume_key_absent(AttrSource(self.source, "__dict__"), name)
        message = f"'{self.cls.__name__}' object has no attribute '{name}'"
        raise PythonError(AttributeError(message))

    def _grad(self, tx: Translator) -> VariableTracker:
        """``.grad`` of an input is read (and guarded) through its source like any input; a tensor
        the graph makes has none (a graph never runs ``backward``)."""
        if self.source is None:
            return ConstantVariable(None)
        stored = _stored_grad(tx, self.source)
        if stored is not None:
            return stored
        real = tx.output.input_value(self.source)
        if not isinstance(real, torch.Tensor):
            raise Unsupported("tensor_attr", "Tensor.grad of a value that is not a graph input")
        return tx.wrap(real.grad, AttrSource(self.source, "grad"))

    def store_grad(self, tx: Translator, value: VariableTracker) -> None:
        """``t.grad = value`` on an input tensor: a side effect replayed after the graph (``None``
        or a tensor of the same shape, dtype and device, as torch's setter demands)."""
        if self.source is None:
            raise Unsupported("store_attr", "Tensor.grad store on a tensor made in the graph")
        if isinstance(value, TensorVariable):
            ex, new = self.example, value.example
            if (ex.shape, ex.dtype, ex.device) != (new.shape, new.dtype, new.device):
                raise Unsupported("store_attr", "a .grad of another shape, dtype or device")
        elif not (isinstance(value, ConstantVariable) and value.value is None):
            raise Unsupported("store_attr", f"Tensor.grad = {value}")
        tx.output.side_effects.store_attr(self, "grad", value)

    def store_data(self, tx: Translator, value: VariableTracker) -> None:
        """``t.data = value`` on an input tensor or parameter of torch's classes: ``set_data``
        as an effectful graph node that runs when the graph runs (``RUNTIME``: AOTAutograd
        would keep no trace of it), run on the fakes too, so that ``t`` keeps its identity,
        ``requires_grad`` and ``.grad`` and takes ``value``'s storage, shape, dtype and device
        for every later read of its tracker (the graph's and, after the call, Python's)."""
        plain = (torch.Tensor, torch.nn.Parameter)
        if (
            self.source is None
            or self.cls not in plain
            or not isinstance(value, TensorVariable)
            or value.cls not in plain
        ):
            raise Unsupported("store_attr", f"Tensor.data = {value} on {self}")
        tx.output.check_picks("Tensor.data =", [self.example], None)  # a write the probe misses
        done = tx.output.call_effectful(set_data, (self, value), {})
        assert isinstance(done, TensorVariable) and done.node.target is set_data
        done.node.meta[RUNTIME] = True  # AOT-based backends would drop it: run as it is

    def call_method(
        self,
        tx: Translator,
        name: str,
        args: list[VariableTracker],
        kwargs: dict[str, VariableTracker],
    ) -> VariableTracker:
        return TensorMethodVariable(self, name).call_function(tx, args, kwargs)

    def unpack(self, tx: Translator) -> list[VariableTracker]:
        if self.example.dim() == 0:
            raise Unsupported("unpack", "iteration over a 0-d tensor")
        return [
            tx.output.call_function(operator.getitem, (self, ConstantVariable(i)), {})
            for i in range(int(self.example.shape[0]))
        ]

    def reconstruct(self, cg: Codegen) -> None:
        if self.node in cg.graph_outputs:
            cg.load_graph_output(self.node)
        elif self.source is not None:
            self.source.reconstruct(cg)
        else:
            raise Unsupported("reconstruct", f"tensor {self.node.name} is not a graph output")

    def __repr__(self) -> str:
        return f"TensorVariable({self.node.name})"


def _has_symbols(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return any(_has_symbols(v) for v in value)
    return isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool))


@dataclass(eq=False, repr=False)
class TensorMethodVariable(BoundAttributeVariable):
    """``t.name`` before the call: an op on ``obj`` (the tensor), a metadata query, or a
    conversion to Python data."""

    obj: TensorVariable

    def python_type(self) -> type:
        """What ``type(t.name)`` is in CPython, for a method: a bound method where the class
        defines it in Python (``split``), a method-wrapper for a slot wrapper, a C method for a
        method descriptor (``add``). This tracker also stands for other attributes found on the
        class, read after the graph (``t.__dict__``, ``t.nbytes``): their type is not known."""
        method = type_lookup(self.obj.python_type(), self.name)
        if isinstance(method, types.FunctionType):
            return types.MethodType
        if isinstance(method, types.WrapperDescriptorType):
            return types.MethodWrapperType
        if isinstance(method, types.MethodDescriptorType):
            return types.BuiltinMethodType
        if isinstance(method, classmethod) and inspect.isfunction(method.__func__):
            return types.MethodType  # bound to the class
        if isinstance(method, staticmethod) and callable(method.__func__):
            return type(method.__func__)  # unbound: a function, or a C function
        if isinstance(method, (types.ClassMethodDescriptorType, types.BuiltinMethodType)):
            return types.BuiltinMethodType  # a C class method, or ``__new__``, bound to the class
        return super().python_type()

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        name = self.name
        if name in SCALAR_METHODS and not args and not kwargs:
            return to_scalar(tx, self.obj, name)
        if name in TO_PYTHON or name in SCALAR_METHODS:
            raise Unsupported(
                "tensor_to_python",
                f"Tensor.{name}() converts a tensor to Python data",
                hint="keep the value a tensor (e.g. use torch.where instead of if/else)",
            )
        if name in POINTER_METHODS and not args and not kwargs:
            return DataPtrVariable.of(tx, self.obj, name)
        if name in INPUT_QUERIES and not args and not kwargs:
            if self.obj.source is None and name in MADE_FROM_INPUTS:
                return _answer_of_made(tx, self.obj, name)
            if self.obj.source is None:
                raise Unsupported("tensor_method", f"Tensor.{name}() of a tensor not an input")
            source = CallSource(AttrSource(self.obj.source, name))
            return self.obj._real_answer(tx, name, source)
        if name in UNSUPPORTED_METHODS or name in POINTER_METHODS:
            raise Unsupported("tensor_method", f"Tensor.{name}() cannot be traced")
        if name in METADATA_METHODS:
            return self._metadata(tx, args, kwargs)
        if name == "requires_grad_" and _turns_grad_off(self.obj, args, kwargs):
            # AOTAutograd (aot_eager, inductor) cannot change a graph input's flag, and a tensor
            # computed in the graph refuses it in eager: CPython runs the call, as torch.compile
            raise Unsupported(
                "requires_grad", "Tensor.requires_grad_(False) on a tensor that requires grad"
            )
        if name == "new" and len(args) == 1 and getattr(args[0], "is_size", False):
            # ``x.new(torch.Size)`` takes sizes where ``x.new(tuple)`` takes data, and a graph
            # keeps no ``torch.Size`` (FX writes it as a tuple): the same uninitialised tensor
            name = "new_empty"
        return tx.output.call_method(name, (self.obj, *args), kwargs)

    def _metadata(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        if self.name == "type" and (args or kwargs):
            # a tensor type (``torch.HalfTensor``) is no graph constant: its name is (same call)
            args = [_tensor_type_name(a) for a in args]
            kwargs = {k: _tensor_type_name(v) for k, v in kwargs.items()}
            return tx.output.call_method("type", (self.obj, *args), kwargs)
        pargs = [a.as_python_constant() for a in args]
        pkwargs = {k: v.as_python_constant() for k, v in kwargs.items()}
        result = getattr(self.obj.example, self.name)(*pargs, **pkwargs)
        if _has_symbols(result):  # a symbolic size/stride/numel: computed by the graph
            return tx.output.call_method(self.name, (self.obj, *args), kwargs)
        if self.name == "storage_offset":
            _guard_storage_offsets(tx, self.obj)
        folded = tx.fold(tuple(result) if isinstance(result, torch.Size) else result)
        return folded.clone(is_size=True) if isinstance(result, torch.Size) else folded


@dataclass(eq=False)
class DataPtrVariable(VariableTracker):
    """``t.data_ptr()``, ``t.untyped_storage()`` and its ``data_ptr()`` (``chain``: the methods
    called on the tensor, in order): a number or storage known only when the graph has run. Any
    use of it breaks there (comparing two pointers is the idiom); the break's code rebuilds it
    by calling the same methods on the tensor after the graph. That gives eager's value while no
    operation of the graph after the call may have moved the tensor's data (``_keeps_storage``:
    ``resize_``, ``set_``, ``out=``..., judged from ``after``, the graph's last node at the call);
    where one may have, rebuilding it is refused."""

    tensor: TensorVariable
    chain: tuple[str, ...]
    after: torch.fx.Node

    @staticmethod
    def of(tx: Translator, tensor: TensorVariable, name: str) -> DataPtrVariable:
        """``tensor.name()`` for a dense tensor of torch's own classes (a subclass may answer
        the call itself) with storage (a functorch transform's tensors have none)."""
        example = tensor.example
        if (
            tensor.python_type() not in (torch.Tensor, torch.nn.Parameter)
            or tx.output.transform_bodies
            or example.layout is not torch.strided
            or example.device.type == "meta"
        ):
            raise Unsupported("tensor_method", f"Tensor.{name}() of {tensor}")
        return DataPtrVariable(tensor, (name,), next(iter(reversed(tx.output.graph.nodes))))

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        if self.chain == ("untyped_storage",) and name == "data_ptr":
            return MethodCallVariable(self, name)  # ``t.untyped_storage().data_ptr``
        raise Unsupported("data_ptr", f"{'.'.join(self.chain)}().{name} of {self.tensor}")

    def call_method(
        self, tx: Translator, name: str, args: list[VariableTracker], kwargs: dict
    ) -> VariableTracker:
        if self.chain == ("untyped_storage",) and name == "data_ptr" and not args and not kwargs:
            return self.clone(chain=(*self.chain, name))
        raise Unsupported("data_ptr", f"{'.'.join(self.chain)}().{name}() of {self.tensor}")

    def equal(self, other: DataPtrVariable) -> bool | None:
        """``self == other`` where known before the graph runs: the same pointer read from one
        tensor (a parameter tied to another module's), with nothing in the graph since either
        read that may have moved its data. None where not known."""
        same = self.tensor.node is other.tensor.node and self.chain == other.chain
        if not same or self.chain[-1] != "data_ptr":
            return None
        if any(_moved_since(vt.after) is not None for vt in (self, other)):
            return None
        return True

    def reconstruct(self, cg: Codegen) -> None:
        moved = _moved_since(self.after)
        if moved is not None:
            raise Unsupported(
                "data_ptr", f"{self.tensor} may have moved since .{self.chain[0]}() ({moved})"
            )
        self.tensor.reconstruct(cg)
        for name in self.chain:
            cg.push_method(lambda name=name: cg.load_attr(name))
            cg.call(0)

    def __repr__(self) -> str:
        return f"DataPtrVariable({self.tensor!r}.{'().'.join(self.chain)}())"


def _moved_since(after: torch.fx.Node) -> torch.fx.Node | None:
    """The first node of the graph after ``after`` that may move a tensor's data, or None."""
    node = after.next
    while node.op != "root":
        if not _keeps_storage(node):
            return node
        node = node.next
    return None


#: Parts of the names of the operators that may move a tensor's data or change its offset into
#: its storage (``resize_``, ``resize_as_``, ``set_``, ``as_strided_``, ``swap_tensors``...)
_MOVING_NAMES = ("resize", "set", "as_strided", "swap")


def _keeps_storage(node: torch.fx.Node) -> bool:
    """Does ``node`` leave every tensor's data where it was? Inputs, outputs, and calls of
    functions and methods not given ``out=`` (which resizes), whose names have no part of
    ``_MOVING_NAMES``, that are not torch's operator objects (``aten.set_.source_Tensor``,
    higher-order operators running subgraphs)."""
    if node.op in ("placeholder", "get_attr", "output"):
        return True
    if node.op not in ("call_function", "call_method") or "out" in node.kwargs:
        return False
    target = node.target
    if isinstance(target, torch._ops.OperatorBase | torch._ops.OpOverloadPacket):
        return False
    name = target if isinstance(target, str) else getattr(target, "__name__", None)
    return isinstance(name, str) and not any(part in name for part in _MOVING_NAMES)


@dataclass(eq=False)
class TensorTruthVariable(VariableTracker):
    """``bool(tensor)`` as 3.13's ``TO_BOOL`` (or ``COMPARE_OP``'s cast flag) makes it for the
    conditional jump or ``UNARY_NOT`` that follows. Its value needs the tensor's data, so that
    instruction breaks the graph (as on 3.11/3.12, where it reads the tensor itself); the break's
    code rebuilds it as a real bool, which the jump requires."""

    tensor: TensorVariable

    def python_type(self) -> type:
        return bool

    def reconstruct(self, cg: Codegen) -> None:
        self.tensor.reconstruct(cg)
        cg.to_bool()

    def __repr__(self) -> str:
        return f"TensorTruthVariable({self.tensor!r})"


@dataclass(eq=False)
class TensorBoolVariable(VariableTracker):
    """``bool(t)`` of a one-element tensor, called as a function (torch.distributions'
    ``_all_true_or_runtime_assert`` returns it for its caller's ``if not ...: raise``). ``tensor``
    is a new boolean node holding the truth as it was at the call (a later in-place change of ``t``
    cannot change it): a conditional jump on it may be a deferred check (``deferred_checks``);
    anything else that needs the value breaks, and the code rebuilds it as ``bool(tensor)``."""

    tensor: TensorVariable

    def python_type(self) -> type:
        return bool

    def reconstruct(self, cg: Codegen) -> None:
        cg.push_callable(lambda: cg.load_const(bool))
        self.tensor.reconstruct(cg)
        cg.call(1)

    def __repr__(self) -> str:
        return f"TensorBoolVariable({self.tensor!r})"


def to_bool(tx: Translator, tensor: TensorVariable) -> TensorBoolVariable | None:
    """``bool(tensor)`` as a ``TensorBoolVariable`` (None when it is not one element: eager
    raises, or the size is symbolic)."""
    numel = tensor.example.numel()
    if not isinstance(numel, int) or numel != 1:
        return None
    return TensorBoolVariable(tx.output.call_function(torch.ne, (tensor, ConstantVariable(0)), {}))


def to_scalar(tx: Translator, tensor: TensorVariable, method: str) -> VariableTracker:
    """``t.item()``, ``int(t)``, ``float(t)``, ``operator.index(t)`` of a one-element tensor: an
    unbacked symbolic number the graph computes (torch.compile's ``capture_scalar_outputs``). Code
    that needs its value while tracing (a branch, a list index, ``range``) then breaks the graph."""
    example = tensor.example
    dtype = example.dtype
    numel = example.numel()
    if method == "__index__" and (error := index_error(example)) is not None:
        raise PythonError(error)
    if not isinstance(numel, int) or numel != 1 or dtype.is_complex or dtype is torch.bool:
        raise Unsupported(
            "tensor_to_python",
            f"Tensor.{method}() of a {dtype} tensor of {numel} elements",
            hint="keep the value a tensor (e.g. use torch.where instead of if/else)",
        )
    value = tx.output.call_method("item", (tensor,), {})
    if method == "__int__" and dtype.is_floating_point:
        value = tx.output.call_function(torch.sym_int, (value,), {})
    elif method == "__float__" and not dtype.is_floating_point:
        value = tx.output.call_function(torch.sym_float, (value,), {})
    return value


#: ``Tensor.__index__``'s error for a tensor that is not one integer (or bool) element.
INDEX_ERROR = "only integer tensors of a single element can be converted to an index"


#: The text methods a tensor's class must keep for its text to be made after the graph: torch's
#: (a user's ``__repr__`` is code to trace, not a value).
_TEXT_METHODS = {repr: "__repr__", str: "__str__", format: "__format__"}
_TORCH_TEXT = {
    getattr(cls, name)
    for cls in (torch.Tensor, torch.nn.Parameter)
    for name in _TEXT_METHODS.values()
}


def tensor_text(tx: Translator, tensor: TensorVariable, fn: Any, spec: str = "") -> VariableTracker:
    """``repr(t)``, ``str(t)`` or ``format(t, spec)``: the tensor's values, so a text the
    rewritten code makes after the graph (``TextVariable``), the tensor watched until then. A
    spec formats a 0-d floating tensor's number (``f"{loss:.4f}"``; torch's ``__format__``), which
    does not raise where it does not raise on ``0.0``; other specs break the graph."""
    cls = tensor.python_type()
    if type_lookup(cls, _TEXT_METHODS[fn]) not in _TORCH_TEXT:
        raise Unsupported("builtin", f"{fn.__name__}() of a {cls.__name__} with its own method")
    if spec:
        example = tensor.example
        number = cls is torch.Tensor and example.dim() == 0 and not example.is_meta
        if not (number and example.dtype.is_floating_point):
            raise Unsupported("builtin", f"format() of {tensor} with spec {spec!r}")
        try:  # a spec no float takes raises the same error for every value: CPython's, here
            format(0.0, spec)
        except ValueError as e:
            raise PythonError(e) from None
    tx.output.watch_text(tensor)
    return TextVariable((TextPiece(fn, tensor, spec),))


def index_error(example: torch.Tensor) -> TypeError | None:
    """The TypeError ``operator.index(t)`` raises, decided by the dtype and a static element
    count; None where it can give a number (its value is data) or the count is symbolic."""
    numel = example.numel()
    integral = not (example.dtype.is_floating_point or example.dtype.is_complex)
    if integral and (not isinstance(numel, int) or numel == 1):
        return None
    return TypeError(INDEX_ERROR)


class _RejectedTensorIndex:
    """A tensor whose ``__index__`` raises: what ``dispatch.index_stand_in`` gives for it."""

    def __index__(self):
        raise TypeError(INDEX_ERROR)


_RejectedTensorIndex.__name__ = _RejectedTensorIndex.__qualname__ = "Tensor"


@dispatch.rule("index_stand_in", TensorVariable)
def _tensor_index_stand_in(value: TensorVariable) -> object | None:
    """A tensor of torch's classes (a subclass may answer ``__index__`` itself) that
    ``index_error`` rejects."""
    if value.cls not in (torch.Tensor, torch.nn.Parameter) or index_error(value.example) is None:
        return None
    return _RejectedTensorIndex()


def set_data(tensor: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """``tensor.data = value`` (``Tensor.data``'s setter) as a graph node: ``tensor`` shares
    ``value``'s storage and metadata from here on, the object and its autograd flags unchanged."""
    tensor.data = value
    return tensor


@dispatch.rule("store_attr", TensorVariable)
def _store_tensor_attribute(
    tx: Translator, obj: TensorVariable, name: str, value: VariableTracker
) -> None:
    """``t.data = value`` is ``store_data``'s; any other store, the general rule's."""
    if name == "data":
        obj.store_data(tx, value)
    else:
        dispatch.lookup("store_attr", VariableTracker)(tx, obj, name, value)


def is_tensor_method(value: Any) -> bool:
    """``torch.Tensor.add`` and other C methods of tensors read from the class (unbound)."""
    owner = getattr(value, "__objclass__", None)
    return isinstance(owner, type) and issubclass(torch.Tensor, owner) and owner is not object


def _tensor_type_name(vt: VariableTracker) -> VariableTracker:
    """``torch.HalfTensor`` as ``"torch.HalfTensor"``, which ``Tensor.type`` takes alike."""
    if vt.is_python_constant():
        value = vt.as_python_constant()
        if isinstance(value, type) and value in getattr(torch, "_tensor_classes", ()):
            return ConstantVariable(f"{value.__module__}.{value.__name__}")
    return vt
