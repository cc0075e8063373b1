"""The decomposition table handed to ``aot_module_simplified``: torch's core-ATen decompositions
plus the composite ops the lowerings expect to see split up (layer/batch norm, GELU, SiLU,
var/std/mean, the softmax backwards), so reductions reach the scheduler as plain sums and maxima.
Softmax and log-softmax stay whole: their lowering reduces the row max and sum in one pass.
"""

from __future__ import annotations

import functools
from typing import Any

import torch
from torch._decomp import core_aten_decompositions, get_decompositions

aten = torch.ops.aten

EXTRA = [
    "_softmax_backward_data",
    "_log_softmax_backward_data",
    "native_layer_norm",
    "native_layer_norm_backward",
    "native_batch_norm",
    "_native_batch_norm_legit_functional",
    "_native_batch_norm_legit",
    "_native_batch_norm_legit_no_training",
    "gelu",
    "gelu_backward",
    "silu",
    "silu_backward",
    "sigmoid_backward",
    "tanh_backward",
    "threshold_backward",
    "var",
    "var_mean",
    "std",
    "std_mean",
    "mean",
    "rms_norm",
    "_fused_rms_norm",
    "logsumexp",
    "hardtanh",
    "leaky_relu",
    "elu",
]

#: Core decompositions we must not use (as Inductor excludes them). The CPU flash-attention one
#: returns the attention weights where the op returns the logsumexp: fine for inference, but the
#: backward (``_scaled_dot_product_flash_attention_for_cpu_backward``) then reads them as the
#: logsumexp and computes wrong gradients. The op stays an extern call (``graph.EXTERN_OPS``).
#: Softmax and log-softmax have lowerings of their own (``lower_reductions.softmax``).
EXCLUDE = [
    "_scaled_dot_product_flash_attention_for_cpu.default",
    "_softmax.default",
    "_log_softmax.default",
]


@functools.lru_cache(maxsize=1)
def decomposition_table() -> dict[Any, Any]:
    ops = [getattr(aten, name) for name in EXTRA if hasattr(aten, name)]  # names vary by version
    table = dict(core_aten_decompositions())
    table.update(get_decompositions(ops))
    for name in EXCLUDE:
        packet, _, overload = name.partition(".")
        if hasattr(aten, packet):
            table.pop(getattr(getattr(aten, packet), overload), None)
    return table
