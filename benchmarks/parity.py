"""Parity corpus side by side: every case of ``tests/corpus`` through bytegraph and through
``torch.compile(backend="eager")`` in the same process, each compared with eager on values, dtype,
shape, device, ``requires_grad``, ``.grad``, Python results, side effects and torch's global state.

    python benchmarks/parity.py [-k SUBSTRING] [--category NAME]

Per case: correctness of both, graphs/breaks on the first call for both, traces after the first
call for both, a ``more`` column (how many breaks bytegraph takes beyond torch.compile's) and
whether the ``tc_breaks`` recorded in the case still matches torch.compile. Then totals, and every
case where bytegraph breaks more than torch.compile with the reason its case states (``why``).
Exit status 1 if bytegraph is wrong or crashes on any case.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from corpus import harness  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", default="", help="only cases whose name contains this")
    parser.add_argument("--category", default="", help="only this category")
    opts = parser.parse_args()
    cases = [
        c
        for c in harness.load_all().values()
        if opts.k in c.name and (not opts.category or c.category == opts.category)
    ]
    rows, totals = (
        [],
        dict(
            bg_wrong=0,
            tc_wrong=0,
            bg_crash=0,
            tc_crash=0,
            bg_breaks=0,
            tc_breaks=0,
            more=0,
            fewer=0,
            bg_retrace=0,
            tc_retrace=0,
            stale=0,
        ),
    )
    start = time.perf_counter()
    for c in sorted(cases, key=lambda c: (c.category, c.name)):
        eager = harness.run_eager(c)
        bg, tc = harness.run_bytegraph(c), harness.run_torch_compile(c)
        bg_diff = harness.differences(bg, eager, c.atol)
        tc_diff = harness.differences(tc, eager, c.atol)
        totals["bg_wrong"] += bool(bg_diff)
        totals["tc_wrong"] += bool(tc_diff)
        totals["bg_crash"] += bg.crash is not None
        totals["tc_crash"] += tc.crash is not None
        totals["bg_breaks"] += bg.breaks
        totals["tc_breaks"] += tc.breaks
        totals["more"] += bg.breaks > tc.breaks
        totals["fewer"] += bg.breaks < tc.breaks
        totals["bg_retrace"] += bg.retraces > 0
        totals["tc_retrace"] += tc.retraces > 0
        stale = tc.breaks != c.tc_breaks
        totals["stale"] += stale
        rows.append((c, bg, tc, bg_diff, tc_diff, stale))
        print(_row(c, bg, tc, bg_diff, tc_diff, stale), flush=True)
    print()
    print(f"{len(rows)} cases in {time.perf_counter() - start:.0f} s")
    print(f"wrong:    bytegraph {totals['bg_wrong']}, torch.compile {totals['tc_wrong']}")
    print(f"crashes:  bytegraph {totals['bg_crash']}, torch.compile {totals['tc_crash']}")
    print(
        f"breaks:   bytegraph {totals['bg_breaks']}, torch.compile {totals['tc_breaks']} "
        f"(bytegraph more on {totals['more']} cases, fewer on {totals['fewer']})"
    )
    print(f"retraced: bytegraph {totals['bg_retrace']}, torch.compile {totals['tc_retrace']} cases")
    print(f"recorded tc_breaks out of date: {totals['stale']}")
    more = [(c, bg, tc) for c, bg, tc, *_ in rows if bg.breaks > tc.breaks]
    print(f"\nbytegraph breaks more than torch.compile on {len(more)} cases:")
    for c, bg, tc in more:
        why = c.why or "(no reason stated in the case)"
        print(f"  {c.name}: {bg.breaks} vs {tc.breaks}: {why}")
    for c, bg, _tc, bg_diff, _, _ in rows:
        if bg_diff or bg.crash:
            print(f"\n{c.name}: " + (bg.crash or "") + "\n  " + "\n  ".join(bg_diff[:5]))
    return 1 if totals["bg_wrong"] or totals["bg_crash"] else 0


def _row(c, bg, tc, bg_diff, tc_diff, stale) -> str:
    def status(run, diff):
        return "CRASH" if run.crash else ("WRONG" if diff else "ok")

    more = f"+{bg.breaks - tc.breaks}" if bg.breaks > tc.breaks else ""
    mark = f"  (tc_breaks recorded {c.tc_breaks})" if stale else ""
    return (
        f"{c.category:<10} {c.name:<40} bytegraph {status(bg, bg_diff):<5} "
        f"{bg.graphs}g/{bg.breaks}b/{bg.retraces}r   torch.compile {status(tc, tc_diff):<5} "
        f"{tc.graphs}g/{tc.breaks}b/{tc.retraces}r   more {more:<3}{mark}"
    )


if __name__ == "__main__":
    sys.exit(main())
