"""``with`` blocks and exception-handling opcodes.

``with`` on context managers the tracer understands (``torch.no_grad()``, ``torch.enable_grad()``,
``torch.set_grad_enabled(b)``) changes grad mode inside the graph. The exception-path opcodes only run
when an exception is raised, which never happens during a successful trace: reaching one is unsupported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bytecode import Instr

from ..exc import Unsupported
from ..variables.contexts import ContextManagerVariable
from . import handler, unsupported

if TYPE_CHECKING:
    from ..translator import Translator


@handler("BEFORE_WITH")
def before_with(tx: Translator, inst: Instr) -> None:
    """(ctx -- exit enter_result)"""
    ctx = tx.pop()
    if not isinstance(ctx, ContextManagerVariable):
        raise Unsupported("context_manager", f"with-block on {ctx}",
                          hint="only torch.no_grad/enable_grad/set_grad_enabled are traced")
    tx.push(ctx.exit_method())
    tx.push(ctx.enter(tx))


unsupported("exception handling is not traced (raising always leaves the graph)",
            "PUSH_EXC_INFO", "POP_EXCEPT", "WITH_EXCEPT_START", "RERAISE", "CHECK_EXC_MATCH",
            "CLEANUP_THROW")
unsupported("coroutines are not traced", "GET_AWAITABLE", "GET_AITER", "GET_ANEXT", "END_ASYNC_FOR",
            "BEFORE_ASYNC_WITH", "ASYNC_GEN_WRAP")
unsupported("`yield from` is not traced (plain generators are)", "SEND", "END_SEND",
            "GET_YIELD_FROM_ITER")
unsupported("pattern matching is not traced", "MATCH_CLASS", "MATCH_MAPPING", "MATCH_SEQUENCE",
            "MATCH_KEYS", "GET_LEN")
unsupported("imports run in Python", "IMPORT_NAME", "IMPORT_FROM")
unsupported("class bodies and name-based scopes are not traced", "LOAD_BUILD_CLASS", "LOAD_NAME",
            "STORE_NAME", "DELETE_NAME", "LOAD_CLASSDEREF", "SETUP_ANNOTATIONS", "LOAD_LOCALS",
            "LOAD_FROM_DICT_OR_DEREF", "LOAD_FROM_DICT_OR_GLOBALS", "LOAD_SUPER_ATTR")
unsupported("deleting globals, attributes and cells is not traced", "DELETE_GLOBAL", "DELETE_ATTR",
            "DELETE_DEREF")
unsupported("print expressions only exist in the REPL", "PRINT_EXPR")
