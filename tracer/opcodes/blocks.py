"""``with`` blocks and exception-handling opcodes.

``with`` on context managers the tracer understands (``torch.no_grad()``, ``torch.enable_grad()``,
``torch.set_grad_enabled(b)``) changes grad mode inside the graph. The exception-path opcodes only
run when an exception is raised, which never happens during a successful trace: reaching one is
unsupported.
"""

from __future__ import annotations

import dis
from typing import TYPE_CHECKING

from bytecode import Instr

from ...codegen.pyversion import OPNAMES
from ..exc import Unsupported
from ..variables.contexts import ContextManagerVariable
from . import handler, unsupported

if TYPE_CHECKING:
    from ..translator import Translator


def _present(*names: str) -> list[str]:
    """Opcodes of one supported version missing from ``KNOWN_OPNAMES``: only where they exist."""
    return [n for n in names if n in OPNAMES]


@handler("BEFORE_WITH")
def before_with(tx: Translator, inst: Instr) -> None:
    """(ctx -- exit enter_result)"""
    ctx = tx.pop()
    if not isinstance(ctx, ContextManagerVariable):
        raise Unsupported(
            "context_manager",
            f"with-block on {ctx}",
            hint="only torch.no_grad/enable_grad/set_grad_enabled are traced",
        )
    tx.push(ctx.exit_method())
    tx.push(ctx.enter(tx))


unsupported(
    "exception handling is not traced (raising always leaves the graph)",
    "PUSH_EXC_INFO",
    "POP_EXCEPT",
    "WITH_EXCEPT_START",
    "RERAISE",
    "CHECK_EXC_MATCH",
    "CLEANUP_THROW",
)
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
    "`yield from` is not traced (plain generators are)", "SEND", "END_SEND", "GET_YIELD_FROM_ITER"
)
unsupported(
    "pattern matching is not traced",
    "MATCH_CLASS",
    "MATCH_MAPPING",
    "MATCH_SEQUENCE",
    "MATCH_KEYS",
    "GET_LEN",
)
unsupported(
    "class bodies and name-based scopes are not traced",
    "LOAD_BUILD_CLASS",
    "LOAD_NAME",
    "STORE_NAME",
    "DELETE_NAME",
    "LOAD_CLASSDEREF",
    "SETUP_ANNOTATIONS",
    "LOAD_LOCALS",
    "LOAD_FROM_DICT_OR_DEREF",
    "LOAD_FROM_DICT_OR_GLOBALS",
)
unsupported(
    "deleting globals, attributes and cells is not traced",
    "DELETE_GLOBAL",
    "DELETE_ATTR",
    "DELETE_DEREF",
)
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
