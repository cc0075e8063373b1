"""What the whole process shares while compiling: one lock for every compile, and the
once-per-process preparation of torch that makes tracing from any thread safe."""

from __future__ import annotations

import threading

import torch

from .fakes.deferred_dynamo import defer_dynamo

#: One lock for every compile of the process, as torch.compile has: tracing and the backends import
#: parts of torch lazily, and those imports are circular; six threads making their first compiles
#: together got ``ImportError: cannot import name ... from partially initialized module
#: 'torch._dynamo.exc'``. Reentrant: a trace may run another compiled function's first call. Cache
#: lookups never take it.
COMPILE_LOCK = threading.RLock()
_prepared = False


def prepare_process() -> None:
    """Once per process, at the first ``compile()``: what torch's fake mode does on its first entry,
    made safe. On a CUDA build of torch without a GPU, that entry registers a no-op CUDA device
    guard; torch 2.11 ties it to the registering thread, so after that thread ends the next trace
    crashes the process (SIGSEGV in ``FakeTensorMode.__enter__``). Registered here from the main
    thread, or from a thread that never ends, it leaves torch as a trace would."""
    global _prepared
    if _prepared:
        return
    _prepared = True
    defer_dynamo()  # fake modes read torch._dynamo.config: not a reason to import all of Dynamo
    ensure = getattr(torch._C, "_ensureCUDADeviceGuardSet", None)
    if ensure is None or not torch.cuda._is_compiled() or torch.cuda.is_available():
        return
    if threading.current_thread() is threading.main_thread():
        ensure()
        return
    done = threading.Event()

    def register_and_stay() -> None:
        ensure()
        done.set()
        threading.Event().wait()  # never returns: the registration lives as long as the process

    threading.Thread(target=register_and_stay, name="bytegraph-device-guard", daemon=True).start()
    done.wait()
