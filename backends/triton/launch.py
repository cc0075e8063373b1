"""Compiling and launching generated kernels.

``load_kernel(source, name)`` writes the kernel's canonical text (no comments, a name derived from
its hash) to ``config.cache_dir/k<hash>.py`` once and returns the ``@triton.jit`` function: a
kernel that only differs in name (one per repeated layer) is written, imported and compiled once.
``KernelLauncher`` holds one kernel with its block sizes (a heuristic, or
``autotune.Autotuner``'s pick per size tuple) and computes the grid on each call.
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

import torch

from . import config
from .autotune import Autotuner, next_power_of_2
from .kernel import GeneratedKernel

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
    warps = 8 if xblock * rblock >= 4096 else 4
    return {"XBLOCK": xblock, "RBLOCK": rblock, "num_warps": warps}


class KernelLauncher:
    """Calls one generated kernel: ``launcher(*pointers, *sizes, xnumel[, rnumel])``.

    Block sizes come from ``block_sizes``, or with ``autotune`` from an ``Autotuner`` that picks
    (and caches on disk) the fastest of a few configs once per size tuple.
    """

    def __init__(self, kernel: GeneratedKernel, autotune: bool = False) -> None:
        self.kernel = kernel
        self.name = kernel.name
        self.source = module_source(kernel)
        self.fn = load_kernel(self.source, kernel.name)
        self.meta = block_sizes(kernel)
        self.tuner = Autotuner(kernel, self.source, self.meta) if autotune else None
        self.n_pointers = len(kernel.pointer_args)

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
