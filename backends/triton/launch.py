"""Compiling and launching generated kernels.

``load_kernel(source, name)`` writes the kernel's canonical text (no comments, a name derived from
its hash) to ``config.cache_dir/k<hash>.py`` once and returns the ``@triton.jit`` function: a
kernel that only differs in name (one per repeated layer) is written, imported and compiled once.
``KernelLauncher`` holds one kernel with its block sizes (a heuristic, or
``autotune.Autotuner``'s pick per size tuple); on a GPU its ``entry`` (text from
``entry_source``) launches the compiled kernel with the grid and arguments prepared once, under
the interpreter and while autotuning calls go through triton's ``JITFunction``.
``ensure_strides`` is the wrapper's guard that tensors arrive with the strides the code assumes.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

import sympy
import torch

from . import config
from .autotune import Autotuner, next_power_of_2
from .kernel import GeneratedKernel

try:
    import triton
    from triton.runtime.driver import driver
except ImportError:  # the package must import without triton
    triton = driver = None

_MODULES: dict[str, Any] = {}

PRELUDE = """import triton
import triton.language as tl
{libdevice}

"""

#: Helpers a kernel may call, emitted before it when its source names them.
HELPERS = {
    "_prod_combine": """@triton.jit
def _prod_combine(a, b):
    return a * b

""",
}


def module_source(kernel: GeneratedKernel) -> str:
    libdevice = (
        "from triton.language.extra import libdevice" if "libdevice." in kernel.source else ""
    )
    helpers = "".join(text for name, text in HELPERS.items() if name in kernel.source)
    return PRELUDE.format(libdevice=libdevice) + helpers + kernel.source


def canonical_source(source: str, name: str) -> tuple[str, str]:
    """The text a kernel is compiled from and its function name there: comment lines dropped and
    ``name`` replaced by one derived from the rest, so kernels that differ only in name and fx-node
    comments (a repeated layer's) are compiled once. Profilers show these derived names."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith("#")]
    text = "\n".join(lines).replace(f"def {name}(", "def KERNEL(") + "\n"
    mode = "interpret" if config.interpret() else "compiled"  # triton.jit differs between them
    digest = hashlib.sha256(f"{mode}\n{text}".encode()).hexdigest()[:32]
    kind = "red" if name.startswith("triton_red") else "poi"
    fn_name = f"triton_{kind}_{digest[:16]}"
    return text.replace("def KERNEL(", f"def {fn_name}("), fn_name


def load_kernel(source: str, name: str) -> Any:
    """The ``@triton.jit`` function ``name`` of ``source``, compiled from its canonical text
    (``canonical_source``), which is written to ``config.cache_dir`` once under its hash."""
    text, fn_name = canonical_source(source, name)
    digest = fn_name.rsplit("_", 1)[1]
    module = _MODULES.get(digest)
    if module is None:
        os.makedirs(config.cache_dir, exist_ok=True)
        path = os.path.join(config.cache_dir, f"k{digest}.py")
        if not os.path.exists(path):
            fd, tmp = tempfile.mkstemp(dir=config.cache_dir, suffix=".py")
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, path)
        spec = importlib.util.spec_from_file_location(f"bytegraph_kernel_{digest}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        _MODULES[digest] = module
    return getattr(module, fn_name)


def static(expr: Any, default: int) -> int:
    try:
        return int(expr)
    except TypeError:
        return default


def block_sizes(kernel: GeneratedKernel) -> dict[str, int]:
    """Heuristic XBLOCK/RBLOCK/num_warps for a kernel (sizes unknown at compile time: defaults)."""
    numel = static(kernel.numel, 1 << 20)
    if not kernel.is_reduction:
        return {"XBLOCK": min(1024, next_power_of_2(numel)), "num_warps": 4}
    if kernel.persistent:
        rblock = next_power_of_2(static(kernel.rnumel, 1))
    elif kernel.outer:  # coalesced along the rows: many of them, a short step along each
        xblock = max(1, min(next_power_of_2(numel), 64))
        return {
            "XBLOCK": xblock,
            "RBLOCK": min(8, next_power_of_2(static(kernel.rnumel, 8))),
            "num_warps": 4,
        }
    else:
        rblock = min(config.looped_rblock, next_power_of_2(static(kernel.rnumel, 1 << 20)))
    xblock = max(1, min(next_power_of_2(numel), 2048 // rblock, 64))
    # fewer rows per program when that is what it takes to give every SM programs to run
    enough = max(1, numel // config.min_reduction_programs)
    xblock = min(xblock, 1 << (enough.bit_length() - 1))
    warps = 8 if xblock * rblock >= 4096 else 4
    return {"XBLOCK": xblock, "RBLOCK": rblock, "num_warps": warps}


class KernelLauncher:
    """Calls one generated kernel: ``launcher(*pointers, *sizes, xnumel[, rnumel])``.

    Block sizes come from ``block_sizes``, or with ``autotune`` from an ``Autotuner`` that picks
    (and caches on disk) the fastest of a few configs once per size tuple.

    Compiled (not interpreted, not autotuned) kernels launch through ``entry``, a function
    generated here once per kernel: it takes the pointers' addresses, keys on what triton
    specializes on (a pointer's 16-byte alignment; a size argument's ``== 1``, ``% 16`` and int32
    range, for sizes not fixed at compile time), takes the compiled kernel for that key and calls
    triton's launcher with the grid written into its text for static sizes. Triton's
    ``JITFunction`` compiles each key once (``warmup``), so the specialization is triton's own;
    its per-call argument binding, specialization and cache lookup are what the entry skips.
    The wrapper binds each kernel's name to ``entry``.
    """

    def __init__(
        self, kernel: GeneratedKernel, autotune: bool = False, aligned: frozenset[str] = frozenset()
    ) -> None:
        self.kernel = kernel
        self.name = kernel.name
        self.source = module_source(kernel)
        self.fn = load_kernel(self.source, kernel.name)
        self.meta = block_sizes(kernel)
        self.tuner = Autotuner(kernel, self.source, self.meta) if autotune else None
        self.n_pointers = len(kernel.pointer_args)
        #: specialization key -> compiled kernel (``triton.compiler.CompiledKernel``)
        self.compiled: dict[Any, Any] = {}
        self.entry: Any = self.__call__
        self.entry_source = ""  #: the generated entry's text (empty when calls go through triton)
        hooks = _launch_hooks()
        if not config.interpret() and self.tuner is None and hooks is not None:
            self.entry_source = entry_source(kernel, self.meta, bool(hooks), aligned)
            self._scope: dict[str, Any] = {
                "variants": {},
                "prepare": self._prepare,
                "hooks": hooks,
                "traced": self.__call__,
            }
            exec(compile(self.entry_source, f"<launcher {self.name}>", "exec"), self._scope)
            self.entry = self._scope["launch"]

    def __call__(self, *args: Any) -> None:
        xnumel = args[-2] if self.kernel.is_reduction else args[-1]
        if xnumel <= 0 or (self.kernel.is_reduction and args[-1] <= 0):
            return
        meta = self.meta
        if self.tuner is not None:
            sizes = tuple(int(a) for a in args[self.n_pointers :])
            meta = self.tuner.pick(self.launch, args, sizes).meta()
        self.launch(args, meta)

    def launch(self, args: Sequence[Any], meta: dict[str, int]) -> None:
        xnumel = args[-2] if self.kernel.is_reduction else args[-1]
        grid = ((xnumel + meta["XBLOCK"] - 1) // meta["XBLOCK"],)
        self.fn[grid](*args, **meta)

    def _prepare(self, key: Any, args: Sequence[Any]) -> tuple[Any, Any, Any]:
        """Compile (or find in triton's caches) the kernel for ``args``, whose specialization
        ``key`` stands for; returns what the entry passes triton's launcher."""
        if "stream" not in self._scope:  # the stream of the device the kernel's tensors are on
            device = next(a.device for a in args if isinstance(a, torch.Tensor))
            index = device.index if device.index is not None else driver.active.get_current_device()
            self._scope.update(stream=driver.active.get_current_stream, device=index)
        kernel = self.fn.warmup(*args, grid=(1,), **self.meta)
        if kernel is None:
            raise RuntimeError(f"triton did not compile {self.name} synchronously")
        self.compiled[key] = kernel
        run = kernel.run  # loads the binary: ``function`` is set from here on
        return run, kernel.function, kernel.packed_metadata


def _launch_hooks() -> tuple[list, list] | None:
    """Triton's launch-hook lists (a profiler adds to them; launches then go through triton), or
    ``()`` where triton keeps no such lists and installed no hook, or None where a hook is set."""
    runtime = getattr(getattr(triton, "knobs", None), "runtime", None)
    enter = getattr(runtime, "launch_enter_hook", None)
    leave = getattr(runtime, "launch_exit_hook", None)
    if hasattr(enter, "calls") and hasattr(leave, "calls"):
        return enter.calls, leave.calls
    return None if enter is not None or leave is not None else ()


def entry_source(
    kernel: GeneratedKernel, meta: dict[str, int], hooks: bool, aligned: frozenset[str]
) -> str:
    """Text of ``launch(p0, .., s0, ..)``, the compiled-mode entry of ``KernelLauncher``.

    Tensors named in ``aligned`` (buffers the wrapper allocates: 16-byte aligned) go to triton's
    launcher as they are; the others' addresses are read, keyed on their alignment and passed as
    numbers. Sizes static at compile time are written in as numbers, as are the grid and the
    block sizes; only the others take part in the specialization key. With ``hooks``, a call
    made while a profiler's launch hook is installed goes through triton (``traced``), which
    gives hooks what they expect."""
    sizes = [e for _, e in kernel.size_args] + [kernel.numel]
    if kernel.is_reduction:
        sizes.append(kernel.rnumel)
    pointers = [f"p{i}" for i in range(len(kernel.pointer_args))]
    params = pointers + [f"s{i}" for i in range(len(sizes))]
    static_sizes = [int(e) if isinstance(e, sympy.Integer) else None for e in sizes]
    unknown = [i for i, name in enumerate(kernel.pointer_args) if name not in aligned]
    values = [f"a{i}" if i in unknown else f"p{i}" for i in range(len(pointers))] + [
        f"s{i}" if v is None else str(v) for i, v in enumerate(static_sizes)
    ]
    lines = [f"def launch({', '.join(params)}):"]
    xpos = len(kernel.size_args)
    extents = [xpos] + ([xpos + 1] if kernel.is_reduction else [])
    if any(static_sizes[i] is not None and static_sizes[i] <= 0 for i in extents):
        return "\n".join([*lines, "    return", ""])
    empty = [f"s{i} <= 0" for i in extents if static_sizes[i] is None]
    if empty:
        lines.append(f"    if {' or '.join(empty)}:")
        lines.append("        return")
    if hooks:
        lines += ["    if hooks[0] or hooks[1]:", f"        return traced({', '.join(params)})"]
    lines += [f"    a{i} = p{i}.data_ptr()" for i in unknown]
    key = ["0"]  # every pointer aligned: nothing to tell apart
    if unknown:
        any_odd = " | ".join(f"a{i}" for i in unknown)
        each = ", ".join(f"a{i} & 15 == 0" for i in unknown)
        key = [f"({any_odd}) & 15 and ({each},)"]
    for i, v in enumerate(static_sizes):
        if v is None:
            key.append(f"(s{i} == 1, s{i} % 16 == 0, -2147483648 <= s{i} <= 2147483647)")
    lines.append(f"    key = {key[0]}" if len(key) == 1 else f"    key = ({', '.join(key)})")
    lines += [
        "    variant = variants.get(key)",
        "    if variant is None:",
        f"        variant = variants[key] = prepare(key, ({', '.join(params)},))",
    ]
    xblock = meta["XBLOCK"]
    xnumel = static_sizes[xpos]
    grid = str(-(-xnumel // xblock)) if xnumel is not None else f"-(-s{xpos} // {xblock})"
    blocks = [str(meta["XBLOCK"])] + ([str(meta["RBLOCK"])] if kernel.is_reduction else [])
    lines.append(
        f"    variant[0]({grid}, 1, 1, stream(device), variant[1], variant[2], None, None, None, "
        f"{', '.join(values + blocks)})"
    )
    return "\n".join(lines) + "\n"


def ensure_strides(t: torch.Tensor | None, stride: tuple[int, ...]) -> torch.Tensor | None:
    """``t`` itself if it has ``stride`` (ignoring size-1 dims), else a copy that has it.

    ``None`` passes through: a tuple-returning op may leave an output undefined at run time that
    its meta function describes as a tensor (``mkldnn_rnn_layer``'s workspace in inference)."""
    if t is None:
        return t
    actual = t.stride()
    for n, a, e in zip(t.shape, actual, stride, strict=True):
        if n != 1 and a != e:
            break
    else:
        return t
    broadcast = [
        d for d, (n, e) in enumerate(zip(t.shape, stride, strict=True)) if n != 1 and e == 0
    ]
    if broadcast:  # an expanded layout: copy one slice, expand it again (equal along those dims)
        base = t
        for d in broadcast:
            base = base.narrow(d, 0, 1)
        return ensure_strides(base, stride).expand(t.shape)
    out = torch.empty_strided(t.shape, stride, dtype=t.dtype, device=t.device)
    return out.copy_(t)
