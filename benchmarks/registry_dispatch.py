"""Registry dispatch in third-party models, bytegraph beside torch.compile (issue 41): libraries
that look a function up in a dict keyed by ``type(x)`` on every call of an op. ``einops`` finds
its backend by ``_type2backend.get(type(tensor))`` in each ``rearrange``/``reduce``/``repeat``
(lucidrains' models call them in every block); torch.distributions finds a KL divergence by
``_KL_MEMOIZE[type(p), type(q)]`` and a transform by ``_registry[type(constraint)]`` (pyro and
its users' models call them per step).

    python benchmarks/registry_dispatch.py [--models a,b]

For each model of ``benchmarks/third_party.py`` that dispatches this way (its libraries are in
the benchmark venv ``benchmarks/requirements-third-party.txt`` describes): the registry lookups
one eager inference call makes (counted by a profile hook on the lookup functions' code), then
for each engine (backend eager; torch.compile in a worker process that never imports bytegraph)
graphs and breaks of ``explain``, the breaks whose stack passes through a lookup function, and
whether the compiled output equals eager's (two calls: the second reuses the first's code).
Exit status 1 if bytegraph breaks in a lookup function or is wrong anywhere.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from typing import Any

import third_party  # its folder is the script's: it puts tests/ first (the model zoo)
from models import vision_zoo

#: The lookup functions: (module, qualified name) of each function that reads a registry by type.
LOOKUPS = {
    "einops": ("einops._backends", "get_backend"),
    "torch.distributions kl": ("torch.distributions.kl", "kl_divergence"),
    "torch.distributions constraints": (
        "torch.distributions.constraint_registry",
        "ConstraintRegistry.__call__",
    ),
}
#: Models of the sweep whose forward dispatches through a registry (checked: each makes lookups).
MODELS = [
    "vit",
    "simple_vit",
    "cait",
    "cross_vit",
    "xt_vit",
    "xt_decoder",
    "xt_encoder_mask",
    "perceiver",
    "nystrom",
    "local_attention",
    "pyro_vae",
]


def _lookup_codes() -> dict[Any, str]:
    import importlib

    codes = {}
    for library, (module, qualname) in LOOKUPS.items():
        target: Any = importlib.import_module(module)
        for part in qualname.split("."):
            target = getattr(target, part)
        codes[target.__code__] = library
    return codes


def _eager(arch) -> tuple[Any, dict[str, int], Any]:
    """The model, the lookups one eager inference call makes by library, and its output."""
    import torch

    codes = _lookup_codes()
    model = vision_zoo.build(arch).eval()
    args, kwargs = vision_zoo.inputs(arch)
    with torch.no_grad():
        model(*args, **kwargs)  # lazy initialisation and registry fills are not counted
        counts: dict[str, int] = {}

        def profile(frame, event, _arg):
            if event == "call" and frame.f_code in codes:
                counts[codes[frame.f_code]] = counts.get(codes[frame.f_code], 0) + 1

        sys.setprofile(profile)
        try:
            torch.manual_seed(2)
            out = model(*args, **kwargs)
        finally:
            sys.setprofile(None)
    return model, counts, (args, kwargs, out)


def _in_lookup(frames: list[tuple[str, str]]) -> bool:
    """Does a break's stack (file, function) pass through a lookup function?"""
    names = {
        (module.replace(".", "/") + ".py", qualname.split(".")[-1])
        for module, qualname in LOOKUPS.values()
    }
    return any(file.endswith(tail) and name == fn for file, fn in frames for tail, name in names)


def _same(a: Any, b: Any) -> bool:
    import torch

    if isinstance(a, torch.Tensor):
        return (
            isinstance(b, torch.Tensor)
            and (a.dtype, a.shape, a.device) == (b.dtype, b.shape, b.device)
            and torch.allclose(a, b, atol=1e-5, equal_nan=True)
        )
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    return a == b


def _engine_row(engine: str, name: str) -> dict:
    """Graphs, breaks, breaks in a lookup and values of one engine on one model."""
    import torch

    arch = third_party.BY_NAME[name]
    model, _, (args, kwargs, expected) = _eager(arch)
    if engine == "tc":
        import torch._dynamo as dynamo

        report = dynamo.explain(model)(*args, **kwargs)
        graphs, reasons = report.graph_count, report.break_reasons
        stacks = [[(f.filename, f.name) for f in r.user_stack] for r in reasons]
        dynamo.reset()
        compiled = torch.compile(model, backend="eager")
    else:
        import bytegraph

        report = bytegraph.explain(model)(*args, **kwargs)
        graphs, reasons = report.graph_count, report.break_reasons
        stacks = [[(loc.filename, loc.function) for loc in r.user_stack] for r in reasons]
        compiled = bytegraph.compile(model, backend="eager")
    right = True
    with torch.no_grad():
        for _ in range(2):
            torch.manual_seed(2)
            right = right and _same(compiled(*args, **kwargs), expected)
    return {
        "graphs": graphs,
        "breaks": len(reasons),
        "in_lookup": sum(map(_in_lookup, stacks)),
        "right": right,
    }


def _tc(name: str) -> dict:
    """torch.compile's row, from a worker process that never imports bytegraph."""
    done = subprocess.run(
        [sys.executable, __file__, "--tc-worker", name], capture_output=True, text=True, check=False
    )
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"error": done.stderr.strip().splitlines()[-1:]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated model names")
    parser.add_argument("--tc-worker", default="", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    third_party.vision_models._quiet()
    if opts.tc_worker:
        print(json.dumps(_engine_row("tc", opts.tc_worker)))
        return 0
    print(
        "| model | library | lookups per call | bg graphs/breaks | in a lookup | bg right "
        "| tc graphs/breaks | in a lookup | tc right |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    bad = False
    for name in opts.models.split(","):
        arch = third_party.BY_NAME[name]
        _, counts, _ = _eager(arch)
        tc = _tc(name)
        bg = _engine_row("bg", name)
        bad = bad or bg["in_lookup"] > 0 or not bg["right"] or not counts
        lookups = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"
        tc_cells = (
            f"{tc['graphs']}/{tc['breaks']} | {tc['in_lookup']} | {tc['right']}"
            if "graphs" in tc
            else f"error: {tc['error']} | - | -"
        )
        print(
            f"| {name} | {arch.family} | {lookups} | {bg['graphs']}/{bg['breaks']} "
            f"| {bg['in_lookup']} | {bg['right']} | {tc_cells} |",
            flush=True,
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
