"""NumPy arrays traced through torch ops, as torch.compile traces them.

``x.numpy()`` gives a ``NumpyArrayVariable`` over the very tensor ``x`` (they share memory, so an
in-place change of either is seen by the other). NumPy functions (``np.sin``, ``np.sum``...),
array methods, attributes and operators become graph nodes running ``torch._numpy`` (NumPy's API
written over tensors) on the tensors: a ``NumpyCall`` node converts its tensor arguments to
``torch._numpy.ndarray``, calls the function and hands back tensors. ``torch.from_numpy(a)`` is
the array's tensor again. An array leaving the graph is made with ``tensor.numpy()``; a 0-d result
of a NumPy function leaves as the NumPy scalar NumPy returns (``np.float32``). What
``torch._numpy`` cannot do fails on the fake tensors: a graph break, the code runs in NumPy.
"""

from __future__ import annotations

import functools
import operator
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
import torch.fx

from ...guards.sources import AttrSource, NumpyTensorSource, Source
from ..exc import PythonError, Unsupported
from . import dispatch
from .base import VariableTracker
from .constants import ConstantVariable
from .containers import DictVariable, ListVariable, TupleVariable
from .tensors import TensorVariable

if TYPE_CHECKING:
    from ...codegen.emit import Codegen
    from ..translator import Translator

try:
    import numpy as np
except ImportError:  # NumPy is optional: no array can reach the tracer without it
    np = None


@functools.cache
def _tnp() -> Any:
    """``torch._numpy``, imported when NumPy code is first traced (not by ``import bytegraph``)."""
    import torch._numpy as tnp

    return tnp


class NumpyCall:
    """The target of a graph node running NumPy code over tensors: ``fn`` (a ``torch._numpy``
    function, an ``operator`` function) or the method or attribute ``name`` of the first argument.
    Tensor arguments arrive as tensors and are seen as arrays; array results leave as tensors.
    ``torch._numpy`` is torch code over those tensors: what it changes is an argument's memory
    (``np.put_along_axis(a, ...)``, ``out=``), which the graph carries (``effects.classify``)."""

    mutates_only_arguments = True

    def __init__(self, fn: Any = None, name: str | None = None, attribute: bool = False) -> None:
        self.fn, self.name, self.attribute = fn, name, attribute
        #: ``np.array``/``np.asarray``: a list of tensors is stacked (see ``__call__``)
        self.makes_array = fn is not None and fn in (_tnp().array, _tnp().asarray)
        label = name or getattr(fn, "__name__", "call")
        self.__name__ = f"numpy_{label}"
        self.__qualname__ = self.__name__
        self.__module__ = __name__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        stacked = _stackable(args[0]) if self.makes_array and args else None
        if stacked is not None:
            # ``np.array([a, b])`` of arrays: ``torch._numpy`` stacks a list of tensors; a list of
            # its arrays it converts through Python numbers (on fake tensors: no values at all)
            args = (stacked, *_to_arrays(args[1:]))
        else:
            args = _to_arrays(args)
        kwargs = _to_arrays(kwargs)
        if self.name is not None:
            target = getattr(args[0], self.name)
            result = target if self.attribute else target(*args[1:], **kwargs)
        else:
            result = self.fn(*args, **kwargs)
        return _to_tensors(result)

    def __repr__(self) -> str:
        return self.__name__


def _stackable(value: Any) -> list[torch.Tensor] | None:
    """A non-empty list or tuple of tensors as ``np.array`` stacks them: each in the dtype NumPy
    gives the result (torch promotes int64 with float32 to float32, NumPy to float64); None for
    anything else, or a dtype NumPy does not have."""
    if not isinstance(value, (list, tuple)) or not value:
        return None
    if not all(isinstance(v, torch.Tensor) for v in value):
        return None
    dtypes = {v.dtype for v in value}
    if len(dtypes) == 1:
        return list(value)
    try:
        common = np.result_type(*(np.dtype(_numpy_dtype(d)) for d in dtypes))
    except TypeError:
        return None
    dtype = getattr(torch, common.name, None)
    if not isinstance(dtype, torch.dtype):
        return None
    return [v.to(dtype) for v in value]


def _to_arrays(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return _tnp().ndarray(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_to_arrays(v) for v in value)
    if isinstance(value, dict):
        return {k: _to_arrays(v) for k, v in value.items()}
    return value


def _to_tensors(value: Any) -> Any:
    tnp = _tnp()
    if isinstance(value, tnp.ndarray):
        return value.tensor
    if isinstance(value, (list, tuple)):
        return type(value)(_to_tensors(v) for v in value)
    if isinstance(value, tnp.DType):
        return np.dtype(value.name)
    return value


@dataclass(eq=False)
class NumpyArrayVariable(VariableTracker):
    tensor: TensorVariable  #: the tensor holding the array's data (shared memory)
    scalar: bool = False  #: a NumPy scalar (``np.float32(...)``), not a 0-d array
    source: Any = None

    def python_type(self) -> type:
        if self.scalar:
            return np.dtype(_numpy_dtype(self.tensor.example.dtype)).type
        return np.ndarray

    def var_getattr(self, tx: Translator, name: str) -> VariableTracker:
        example = self.tensor.example
        if name == "shape":
            return tx.fold(tuple(example.shape))
        if name == "ndim":
            return ConstantVariable(example.dim())
        if name == "size":
            return ConstantVariable(example.numel())
        if name == "dtype":
            return ConstantVariable(np.dtype(_numpy_dtype(example.dtype)))
        if name == "itemsize":
            return ConstantVariable(example.element_size())
        if name in ("T", "real", "imag", "flat"):
            return call(tx, NumpyCall(name=name, attribute=True), [self], {})
        if not hasattr(np.ndarray, name):
            raise Unsupported("getattr", f"numpy.ndarray has no attribute {name!r}")
        return NumpyMethodVariable(self, name)

    def unpack(self, tx: Translator) -> list[VariableTracker]:
        if self.tensor.example.dim() == 0:
            raise PythonError(TypeError("iteration over a 0-d array"))
        return [getitem(tx, self, ConstantVariable(i)) for i in range(self.tensor.example.shape[0])]

    def reconstruct(self, cg: Codegen) -> None:
        if self.source is not None:  # an input array: the object itself (its memory was changed)
            self.source.reconstruct(cg)
            return

        def build() -> None:
            self.tensor.reconstruct(cg)
            cg.load_attr("numpy")
            cg.call_function(0)
            if self.scalar:
                cg.load_const(())
                cg.subscr()

        cg.build_once(self, build)

    def __repr__(self) -> str:
        return f"NumpyArrayVariable({self.tensor.node.name})"


def _numpy_dtype(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


@dataclass(eq=False)
class NumpyMethodVariable(VariableTracker):
    array: NumpyArrayVariable
    name: str
    source: Any = None

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        if self.name in ("tolist", "item", "tobytes", "__array__"):
            raise Unsupported("tensor_to_python", f"ndarray.{self.name}() reads the data")
        return call(tx, NumpyCall(name=self.name), [self.array, *args], kwargs)

    def reconstruct(self, cg: Codegen) -> None:
        self.array.reconstruct(cg)
        cg.load_attr(self.name)


def is_numpy_callable(value: Any) -> bool:
    """A function, ufunc or scalar type of NumPy's namespace (``np.sin``, ``np.float32``), or a
    class of immutable NumPy values (``np.dtype("float")``, ``np.iinfo``, ``np.finfo``: folded on
    constants)."""
    if np is None:
        return False
    if isinstance(value, type):
        return issubclass(value, np.generic) or value in (np.dtype, np.iinfo, np.finfo)
    module = getattr(value, "__module__", None) or ""
    return isinstance(value, np.ufunc) or module == "numpy" or module.startswith("numpy.")


def is_numpy_array(value: Any) -> bool:
    return np is not None and type(value) is np.ndarray


def is_numpy_scalar(value: Any) -> bool:
    """A NumPy scalar (``np.float32(2.0)``): an immutable constant."""
    return np is not None and isinstance(value, np.generic)


def _torch_numpy_fn(fn: Any) -> Any:
    name = getattr(fn, "__name__", None)
    if name is None:
        return None
    if getattr(np.linalg, name, None) is fn:
        return getattr(_tnp().linalg, name, None)
    if getattr(np.fft, name, None) is fn:
        return getattr(_tnp().fft, name, None)
    if getattr(np, name, None) is fn:
        return getattr(_tnp(), name, None)
    return None


def call_numpy(
    tx: Translator, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
) -> VariableTracker:
    """``np.fn(...)``: folded on constants, a ``NumpyCall`` node when an array is involved."""
    if fn in _FROM_ARRAY_PROTOCOL and args and isinstance(args[0], TensorVariable):
        # NumPy reads a tensor through ``Tensor.__array__``: ``x.numpy()`` (its memory)
        args = [tensor_numpy(tx, args[0]), *args[1:]]
        if fn is not np.array and len(args) == 1 and not kwargs:
            return args[0]  # ``np.asarray(x)`` is that very array
    values = [*args, *kwargs.values()]
    if not any(_has_array(v) for v in values):
        if not all(v.is_python_constant() for v in values):
            raise Unsupported("numpy", f"numpy.{getattr(fn, '__name__', fn)} on {values}")
        if getattr(fn, "__module__", "").startswith("numpy.random"):
            raise Unsupported("numpy", "NumPy's random state is not traced")
        try:
            result = fn(
                *[a.as_python_constant() for a in args],
                **{k: v.as_python_constant() for k, v in kwargs.items()},
            )
        except Exception as e:  # noqa: BLE001 (NumPy's own error, raised where CPython raises it)
            raise PythonError(e) from None
        if isinstance(result, np.ndarray):
            return _constant_array(tx, result)
        return ConstantVariable(result)
    target = _torch_numpy_fn(fn)
    if target is None:
        raise Unsupported("numpy", f"numpy.{getattr(fn, '__name__', fn)} has no torch equivalent")
    return call(tx, NumpyCall(target), args, kwargs)


#: NumPy functions that make an array of their first argument (through ``__array__``), whatever
#: it is; other functions given a tensor keep torch's own handling (a ufunc gives back a tensor)
_FROM_ARRAY_PROTOCOL = (
    frozenset() if np is None else frozenset({np.asarray, np.array, np.asanyarray})
)


def _constant_array(tx: Translator, value: Any) -> NumpyArrayVariable:
    """An array NumPy made from constants (``np.arange(3)``): a tensor the graph makes from the
    values (an array of more than ``MAX_CONSTANT_ARRAY`` items is not written into the graph)."""
    try:
        dtype = torch.from_numpy(value).dtype
    except TypeError:
        raise Unsupported("numpy", f"an array of dtype {value.dtype}") from None
    if value.size > MAX_CONSTANT_ARRAY:
        raise Unsupported("numpy", f"an array of {value.size} constants made in the trace")
    data = ConstantVariable(value.tolist())
    tensor = tx.output.call_function(torch.tensor, (data,), {"dtype": ConstantVariable(dtype)})
    return NumpyArrayVariable(tensor)


#: Arrays made from constants up to this size become constants of the graph.
MAX_CONSTANT_ARRAY = 4096


def _has_array(vt: VariableTracker) -> bool:
    if isinstance(vt, NumpyArrayVariable):
        return True
    if isinstance(vt, (TupleVariable, ListVariable)):
        return any(_has_array(i) for i in vt.items)
    return False


def _as_tensors(vt: VariableTracker) -> VariableTracker:
    if isinstance(vt, NumpyArrayVariable):
        return vt.tensor
    if isinstance(vt, TupleVariable):
        return TupleVariable([_as_tensors(i) for i in vt.items])
    if isinstance(vt, ListVariable):
        return ListVariable([_as_tensors(i) for i in vt.items])
    if isinstance(vt, DictVariable):
        return DictVariable({k: _as_tensors(v) for k, v in vt.items.items()})
    if vt.is_python_constant() and _is_numpy_type(vt.as_python_constant()):
        name = np.dtype(vt.as_python_constant()).name
        return ConstantVariable(name)  # ``torch._numpy`` takes dtype names
    return vt


def _is_numpy_type(value: Any) -> bool:
    if isinstance(value, np.dtype):
        return True
    return isinstance(value, type) and issubclass(value, np.generic)


def call(
    tx: Translator,
    target: NumpyCall,
    args: list[VariableTracker],
    kwargs: dict[str, VariableTracker],
) -> VariableTracker:
    """A ``NumpyCall`` graph node; tensor results come back as arrays (0-d ones as scalars)."""
    result = tx.output.call_function(
        target, tuple(_as_tensors(a) for a in args), {k: _as_tensors(v) for k, v in kwargs.items()}
    )
    return _as_arrays(result, scalar_ok=target.name is None or not target.attribute)


def _as_arrays(vt: VariableTracker, scalar_ok: bool) -> VariableTracker:
    if isinstance(vt, TensorVariable):
        return NumpyArrayVariable(vt, scalar=scalar_ok and vt.example.dim() == 0)
    if isinstance(vt, TupleVariable):
        return vt.clone(items=[_as_arrays(i, scalar_ok) for i in vt.items])
    if isinstance(vt, ListVariable):
        return vt.clone(items=[_as_arrays(i, scalar_ok) for i in vt.items])
    return vt


def getitem(tx: Translator, array: NumpyArrayVariable, key: VariableTracker) -> VariableTracker:
    return call(tx, NumpyCall(operator.getitem), [array, key], {})


#: ``operator`` functions with the same meaning on arrays (in-place ones change the array).
OPERATORS = frozenset(
    {
        operator.add,
        operator.sub,
        operator.mul,
        operator.truediv,
        operator.floordiv,
        operator.mod,
        operator.pow,
        operator.matmul,
        operator.and_,
        operator.or_,
        operator.xor,
        operator.neg,
        operator.pos,
        operator.abs,
        operator.invert,
        operator.lt,
        operator.le,
        operator.gt,
        operator.ge,
        operator.eq,
        operator.ne,
        operator.iadd,
        operator.isub,
        operator.imul,
        operator.itruediv,
        operator.ifloordiv,
        operator.imod,
        operator.ipow,
        operator.iand,
        operator.ior,
        operator.ixor,
    }
)


def call_operator(tx: Translator, op: Any, args: list[VariableTracker]) -> VariableTracker | None:
    """``a + 1``, ``a @ b``, ``a += 1``... where an operand is an array (None otherwise)."""
    if not any(isinstance(a, NumpyArrayVariable) for a in args):
        return None
    if any(isinstance(a, TensorVariable) for a in args):
        raise Unsupported("numpy", "an operator mixing a tensor and a NumPy array")
    if op is operator.getitem:
        return getitem(tx, args[0], args[1])
    if op not in OPERATORS:
        raise Unsupported("numpy", f"{op.__name__} on a NumPy array")
    result = call(tx, NumpyCall(op), args, {})
    if op.__name__.startswith("i") and isinstance(args[0], NumpyArrayVariable):
        return args[0]  # an in-place operator changed the array's own tensor
    return result


def setitem(
    tx: Translator, array: NumpyArrayVariable, key: VariableTracker, value: VariableTracker
):
    """``a[key] = value``: the same store on the array's tensor (basic indexing agrees)."""
    if isinstance(value, NumpyArrayVariable):
        value = value.tensor
    dispatch.setitem(tx, array.tensor, key, value)


def from_numpy(
    tx: Translator, fn: Any, array: VariableTracker, kwargs: dict[str, VariableTracker]
) -> VariableTracker | None:
    """``torch.from_numpy(a)``, ``torch.as_tensor(a, dtype=, device=)`` (the same memory where
    dtype and device match, as ``Tensor.to`` returns) and ``torch.tensor(a, dtype=, device=)`` (a
    copy) of a traced array; None for other arguments."""
    if not isinstance(array, NumpyArrayVariable):
        return None
    if not set(kwargs) <= ({"dtype", "device"} if fn is not torch.from_numpy else set()):
        return None
    if fn is torch.tensor:
        copy = ConstantVariable(True)
        return array.tensor.call_method(tx, "to", [], {**kwargs, "copy": copy})
    tensor = tx.output.call_method("detach", (array.tensor,), {})
    return tensor.call_method(tx, "to", [], dict(kwargs)) if kwargs else tensor


def wrap_array(tx: Translator, value: Any, source: Source) -> NumpyArrayVariable | None:
    """An input array: a graph input holding ``torch.from_numpy(array)`` (the same memory),
    guarded on the array's type and dtype first. None for arrays torch cannot take."""
    try:
        tensor = torch.from_numpy(value)
    except (TypeError, ValueError):
        return None
    tx.output.assume_type(source, np.ndarray)
    tx.output.assume_equal(AttrSource(source, "dtype"), value.dtype)
    return NumpyArrayVariable(tx.output.add_input(tensor, NumpyTensorSource(source)), source=source)


@dataclass(eq=False)
class TensorNumpyMethod(VariableTracker):
    """``x.numpy`` before the call."""

    tensor: TensorVariable
    source: Any = None

    def python_type(self) -> type:
        return types.BuiltinMethodType  # ``Tensor.numpy`` is a C method

    def call_function(
        self, tx: Translator, args: list[VariableTracker], kwargs: dict[str, VariableTracker]
    ) -> VariableTracker:
        if args or kwargs:  # ``numpy(force=True)`` copies: not traced
            raise Unsupported("numpy", "Tensor.numpy() with arguments")
        return tensor_numpy(tx, self.tensor)

    def reconstruct(self, cg: Codegen) -> None:
        self.tensor.reconstruct(cg)
        cg.load_attr("numpy")


def tensor_numpy(tx: Translator, tensor: TensorVariable) -> NumpyArrayVariable:
    """``x.numpy()``: an array sharing ``x``'s memory (CPython's errors where NumPy refuses)."""
    example = tensor.example
    if example.requires_grad:
        raise PythonError(
            RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        )
    if example.device.type != "cpu":
        raise Unsupported("numpy", "numpy() of a tensor that is not on the CPU")
    try:  # NumPy refuses some dtypes (bfloat16) and conjugate/negative views: eager's error
        probe = torch.empty(0, dtype=example.dtype)
        (probe.conj() if example.is_conj() else probe).numpy()
    except (TypeError, RuntimeError) as e:
        raise PythonError(e) from None
    return NumpyArrayVariable(tensor)


@dispatch.rule("getattr", TensorVariable)
def _tensor_attribute(tx: Translator, obj: TensorVariable, name: str) -> VariableTracker:
    """``x.numpy`` is the array view's maker; every other attribute is the tensor's own."""
    if name == "numpy" and np is not None:
        return TensorNumpyMethod(obj)
    return obj.var_getattr(tx, name)
