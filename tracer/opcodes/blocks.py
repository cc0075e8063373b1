"""``with`` blocks and exception-handling opcodes.

``with`` on a context manager the tracer understands (``variables/contexts/``: grad and inference
mode, autocast, ``torch.device``, ``fork_rng``, ``nullcontext``, ``@contextmanager`` functions, user
classes) enters it in the trace; any other is a break at the ``with``. Exceptions raised and caught
in the trace are in ``exceptions.py`` (one leaving a with-block too, when its context's exit
ignores it).
"""

from __future__ import annotations

import dis
from typing import TYPE_CHECKING

from bytecode import Instr

from ...codegen.pyversion import OPNAMES
from ..variables.contexts import ContextExitVariable, as_context
from .registry import handler, unsupported

if TYPE_CHECKING:
    from ..translator import Translator


def _present(*names: str) -> list[str]:
    """Opcodes of one supported version missing from ``KNOWN_OPNAMES``: only where they exist."""
    return [n for n in names if n in OPNAMES]


@handler("BEFORE_WITH")
def before_with(tx: Translator, inst: Instr) -> None:
    """(ctx -- exit enter_result)"""
    ctx = as_context(tx, tx.pop())
    result = ctx.enter(tx)
    tx.push(ContextExitVariable(ctx))
    tx.push(result)


unsupported("an exception thrown into a generator is not traced", "CLEANUP_THROW")
unsupported(
    "coroutines are not traced",
    "GET_AWAITABLE",
    "GET_AITER",
    "GET_ANEXT",
    "END_ASYNC_FOR",
    "BEFORE_ASYNC_WITH",
    "ASYNC_GEN_WRAP",
)
unsupported(
    "class bodies and name-based scopes are not traced",
    "LOAD_NAME",
    "STORE_NAME",
    "DELETE_NAME",
    "LOAD_CLASSDEREF",
    "SETUP_ANNOTATIONS",
    "LOAD_LOCALS",
    "LOAD_FROM_DICT_OR_DEREF",
    "LOAD_FROM_DICT_OR_GLOBALS",
)
unsupported("deleting globals is not traced", "DELETE_GLOBAL")
unsupported("print expressions only exist in the REPL", "PRINT_EXPR")
unsupported(
    "exception groups (except*) are not traced",
    "CHECK_EG_MATCH",
    *_present("PREP_RERAISE_STAR", "CALL_INTRINSIC_2"),
)
unsupported("star imports run in Python", *_present("IMPORT_STAR"))
unsupported(
    "interpreter-internal opcodes never appear in a function's code",
    *_present("INTERPRETER_EXIT", "RESERVED"),
)
# NOTE(3.13): ENTER_EXECUTOR replaces a JUMP_BACKWARD in the running code only (co_code, which
# `bytecode` reads, keeps the original); EXIT_INIT_CHECK only runs in the interpreter's own shim
# frames for specialized class calls.
unsupported(
    "opcodes the interpreter inserts for itself never appear in co_code",
    "ENTER_EXECUTOR",
    "EXIT_INIT_CHECK",
)
# NOTE(3.12): dis.opmap also lists instrumented opcodes (sys.monitoring rewrites code in place, but
# co_code, which `bytecode` reads, always shows the plain ones) and compiler pseudo-instructions
# (numbered from 256; they never reach a code object).
unsupported(
    "instrumented opcodes never appear in co_code",
    *sorted(n for n in OPNAMES if n.startswith("INSTRUMENTED_")),
)
unsupported(
    "pseudo-instructions exist only inside the compiler",
    *sorted(n for n in OPNAMES if dis.opmap[n] >= 256),
)
