"""Forget an FX GraphModule's generated source when the module dies.

FX registers the Python source of every ``GraphModule.forward`` it generates in a module-level
loader and in ``linecache`` (so tracebacks through a graph show its lines), and never removes it:
about 600 bytes per graph outlive the graph. A program that compiles and drops many functions
(closures made in a loop) would grow without bound, so every graph bytegraph makes or receives is
tied to a finaliser that drops those two entries once nothing can run that code any more.
"""

from __future__ import annotations

import linecache
import weakref

import torch.fx

from ..guards.epoch import unseen_by_dynamo

_GENERATED = "<eval_with_key>"  # FX's file names for generated code; other names may be shared


def release_source_on_death(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """Return ``gm``, its generated source now dropped from FX's loader and linecache when it
    dies."""
    filename = type(gm).forward.__code__.co_filename
    if filename.startswith(_GENERATED):
        weakref.finalize(gm, _forget, filename)
    return gm


@unseen_by_dynamo  # a finalizer: the collector runs it inside torch.compile's code too
def _forget(filename: str) -> None:
    loader = getattr(torch.fx.graph_module, "_loader", None)  # FX internals: absent -> nothing kept
    cache = getattr(loader, "eval_cache", None)
    if isinstance(cache, dict):
        cache.pop(filename, None)
    linecache.cache.pop(filename, None)
