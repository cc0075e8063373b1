"""The compile report: one static HTML page of everything bytegraph compiled.

    BYTEGRAPH_TRACE_DIR=trace python train.py       # records every compile (trace_records.py)
    python -m bytegraph.report trace                # -> trace/report.html
    >>> bytegraph.report.write_html("report.html")  # in-process, from the functions alive now

The page has an index of compiled functions (entries, graphs, breaks, recompiles, timings) and one
collapsible section per function: each entry's reason and failing guards, graph breaks linked to
their source (file:line, the line, the hint), FX graph code, guards and the generated guard
function, original and rewritten bytecode, kernel sources (triton backend), and the function's
resume functions with the same details. Templates are the constants below; the only script opens
the section a link points into and filters the index. Nothing here compiles or traces.
"""

from __future__ import annotations

import argparse
import html
import os
import sys
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from . import trace_records

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>{style}</style>
</head>
<body>
<header>
<h1>{title}</h1>
<p class="summary">{summary}</p>
<p class="controls">
<button type="button" id="expand-all">Expand all</button>
<button type="button" id="collapse-all">Collapse all</button>
<input type="search" id="filter" placeholder="Filter functions by name" aria-label="Filter">
</p>
</header>
<nav id="index">
<h2>Compiled functions</h2>
{index}
</nav>
<main>
{functions}
<section id="sources">
<h2>Source locations</h2>
{sources}
</section>
</main>
<script>{script}</script>
</body>
</html>
"""

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1200px; padding: 0 1em;
       color: #1d1d1f; }
h1 { font-size: 1.5em; margin-bottom: .2em; }
h2 { font-size: 1.2em; border-bottom: 1px solid #ddd; padding-bottom: .2em; }
h3 { font-size: 1em; margin: .8em 0 .3em; }
pre { background: #f6f8fa; padding: .6em; overflow-x: auto; font-size: 12px; line-height: 1.35;
      border-radius: 4px; margin: .3em 0; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: .25em .6em; border-bottom: 1px solid #eee; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
details { margin: .3em 0; }
details > summary { cursor: pointer; }
details.entry { border: 1px solid #ddd; border-radius: 4px; padding: .3em .6em; }
section.function { margin: 1.5em 0; }
.muted { color: #6e6e73; }
.bad { color: #b3261e; font-weight: 600; }
.warn { color: #9a6700; }
.break { margin: .4em 0; }
.hint { color: #0b57d0; }
.cols { display: grid; grid-template-columns: 1fr 1fr; gap: .6em; }
.src .hl { background: #fff3b0; display: block; }
.controls input { margin-left: .6em; padding: .2em .4em; }
.hidden { display: none; }
"""

#: Opens every <details> around the element a link points to; filters the index and sections.
SCRIPT = """
function reveal(id) {
  var target = document.getElementById(id);
  for (var el = target; el; el = el.parentElement) {
    if (el.tagName === "DETAILS") { el.open = true; }
  }
  if (target) { target.scrollIntoView(); }
}
function setAll(open) {
  document.querySelectorAll("details").forEach(function (d) { d.open = open; });
}
document.getElementById("expand-all").addEventListener("click", function () { setAll(true); });
document.getElementById("collapse-all").addEventListener("click", function () { setAll(false); });
document.getElementById("filter").addEventListener("input", function (event) {
  var text = event.target.value.toLowerCase();
  document.querySelectorAll("[data-name]").forEach(function (el) {
    el.classList.toggle("hidden", el.dataset.name.toLowerCase().indexOf(text) < 0);
  });
});
window.addEventListener("hashchange", function () { reveal(location.hash.slice(1)); });
if (location.hash) { reveal(location.hash.slice(1)); }
"""

INDEX_TABLE = """<table>
<thead><tr><th>Function</th><th>Where</th><th class="n">Entries</th><th class="n">Graphs</th>
<th class="n">Breaks</th><th class="n">Recompiles</th><th class="n">Fallbacks</th>
<th class="n">Trace ms</th><th class="n">Backend ms</th><th class="n">Guard µs/call</th></tr>
</thead>
<tbody>
{rows}
</tbody>
</table>"""

INDEX_ROW = """<tr data-name="{name}"><td><a href="#{anchor}">{name}</a></td>
<td><a href="#{src}" class="muted">{where}</a></td><td class="n">{entries}</td>
<td class="n">{graphs}</td><td class="n">{breaks}</td><td class="n">{recompiles}</td>
<td class="n">{fallbacks}</td><td class="n">{trace_ms}</td><td class="n">{backend_ms}</td>
<td class="n">{guard_us}</td></tr>"""

FUNCTION = """<section class="function" id="{anchor}" data-name="{name}">
<h2>{name} <a href="#{src}" class="muted">{where}</a></h2>
<p class="muted">{settings}</p>
{entries}
{resumes}
{guard_function}
</section>"""

ENTRY = """<details class="entry" id="{anchor}"{open}>
<summary><b>Entry {index}</b> · {reason} · {stats}</summary>
{body}
</details>"""

BREAK = """<div class="break"><span class="{cls}">{what}</span> <b>{kind}</b>: {detail}
{stack}{hint}</div>"""

FRAME = """<div><a href="#{src}">{where}</a> in <code>{function}</code>
<pre>{line}</pre></div>"""

SOURCE = """<div class="src" id="{anchor}"><h3>{where}</h3>
<pre>{lines}</pre></div>"""


def write_html(path: str | os.PathLike, trace_dir: str | os.PathLike | None = None) -> Path:
    """Write the report to ``path`` and return it. Records come from ``trace_dir``, else from the
    directory this process traces to (``BYTEGRAPH_TRACE_DIR``), else from the compiled functions
    alive in this process."""
    trace_dir = trace_dir or trace_records.active_dir()
    records = (
        trace_records.read_dir(trace_dir) if trace_dir is not None else trace_records.in_process()
    )
    out = Path(path)
    out.write_text(render(records), encoding="utf-8")
    return out


def render(records: list[dict]) -> str:
    """The report page for ``records`` (as ``trace_records`` makes them)."""
    page = Page(records)
    return PAGE.format(
        title="bytegraph compile report",
        style=STYLE,
        summary=page.summary(),
        index=page.index(),
        functions="\n".join(page.function(serial) for serial in page.roots),
        sources="\n".join(page.sources_html()),
        script=SCRIPT,
    )


class Page:
    """The records grouped for rendering: compiled functions (by process and serial) with their
    entries, resume functions under the function they resume, and the source locations the page
    links to (each rendered once)."""

    def __init__(self, records: list[dict]) -> None:
        self.prefix = _common_dir([r["function"]["filename"] for r in records])
        self.entries: dict[str, list[dict]] = defaultdict(list)
        self.info: dict[str, dict] = {}
        self.resumes: dict[str, list[str]] = defaultdict(list)
        self.roots: list[str] = []
        self.locations: dict[tuple[str, int], tuple[str, list]] = {}
        for r in records:
            fn = r["function"]
            key, root = _key(r, fn["serial"]), _key(r, fn["root"])
            if key not in self.info:
                self.info[key] = fn
                (self.resumes[root] if key != root else self.roots).append(key)
            self.entries[key].append(r)
        for key in self.resumes:  # resume functions whose root compiled in no record
            if key not in self.info:
                self.roots.append(key)

    # -- summary and index ----------------------------------------------------------------------
    def summary(self) -> str:
        records = [r for entries in self.entries.values() for r in entries]
        total = sum(_seconds(r) for r in records)
        pids = {r.get("pid") for r in records}
        counts = [
            _count(len(self.roots), "compiled function"),
            _count(len(records), "entry", "entries"),
            _count(sum(len(r["graphs"]) for r in records), "graph"),
            _count(sum(len(r["breaks"]) for r in records), "graph break"),
            _count(sum(bool(r["failures"]) for r in records), "recompile"),
            _count(
                sum(r["fallback"] is not None for r in records),
                "fallback to Python",
                "fallbacks to Python",
            ),
        ]
        where = f" Paths are relative to {_e(_shown_dir(self.prefix))}." if self.prefix else ""
        return (
            f"{', '.join(counts)}; {total * 1000:.1f} ms compiling in "
            f"{_count(len(pids), 'process', 'processes')}.{where}"
        )

    def index(self) -> str:
        if not self.roots:
            return '<p class="muted">No compiles were recorded.</p>'
        rows = []
        for key in self.roots:
            fn, records = self._function(key), self._all_entries(key)
            guard = [r["timings"]["guard_us"] for r in records if r["timings"]["guard_us"]]
            rows.append(
                INDEX_ROW.format(
                    name=_e(fn["name"]),
                    anchor=_anchor("fn", key),
                    src=self.location(fn["filename"], fn["lineno"]),
                    where=self.where(fn["filename"], fn["lineno"]),
                    entries=len(records),
                    graphs=sum(len(r["graphs"]) for r in records),
                    breaks=sum(len(r["breaks"]) for r in records),
                    recompiles=sum(bool(r["failures"]) for r in records),
                    fallbacks=sum(r["fallback"] is not None for r in records),
                    trace_ms=f"{sum(r['timings']['trace_s'] for r in records) * 1000:.1f}",
                    backend_ms=f"{sum(r['timings']['backend_s'] for r in records) * 1000:.1f}",
                    guard_us=f"{max(guard):.1f}" if guard else "–",
                )
            )
        return INDEX_TABLE.format(rows="\n".join(rows))

    # -- one function ---------------------------------------------------------------------------
    def function(self, key: str, resume: bool = False) -> str:
        fn = self._function(key)
        resumes = ""
        if self.resumes.get(key):
            inner = "\n".join(self.function(k, resume=True) for k in self.resumes[key])
            resumes = (
                f"<details><summary>Resume functions ({len(self.resumes[key])})</summary>"
                f"\n{inner}\n</details>"
            )
        entries = self.entries.get(key, [])
        last_guard = entries[-1]["guard_function"] if entries else ""
        return FUNCTION.format(
            anchor=_anchor("fn", key),
            name=_e(fn["name"])
            + (" <span class='muted'>(resume function)</span>" if resume else ""),
            src=self.location(fn["filename"], fn["lineno"]),
            where=self.where(fn["filename"], fn["lineno"]),
            settings=_e(_settings_text(fn.get("settings", {}))),
            entries="\n".join(self.entry(key, r) for r in entries),
            resumes=resumes,
            guard_function=_block("Generated guard function (after the last entry)", last_guard),
        )

    def entry(self, key: str, r: dict) -> str:
        t = r["timings"]
        stats = [_count(len(r["graphs"]), "graph"), _count(len(r["breaks"]), "break")]
        if r["fallback"] is not None:
            stats.append("<span class='bad'>ran in Python</span>")
        stats.append(f"trace {t['trace_s'] * 1000:.1f} ms, backend {t['backend_s'] * 1000:.1f} ms")
        if t["guard_us"] is not None:
            stats.append(f"guards {t['guard_us']:.1f} µs/call")
        body = [self._failures(r), self._breaks(r), self._speculated(r)]
        for g in r["graphs"]:
            body.append(_block(f"Graph {g['name']} ({g['ops']} ops)", g["code"]))
        body.append(_block("Guards of this entry", r["guards"]))
        for k in r["kernels"]:
            parts = [k["wrapper"]] + [f"# {x['name']}\n{x['source']}" for x in k["kernels"]]
            body.append(_block(f"Generated code {k['name']}", "\n\n".join(p for p in parts if p)))
        body.append(self._bytecode(r))
        return ENTRY.format(
            anchor=_anchor("fn", key, r["index"]),
            open=" open" if r["breaks"] or r["fallback"] or r["failures"] else "",
            index=r["index"],
            reason=_e(r["reason"]),
            stats=" · ".join(stats),
            body="\n".join(b for b in body if b),
        )

    def _failures(self, r: dict) -> str:
        if not r["failures"]:
            return ""
        items = "".join(f"<li><code>{_e(f)}</code></li>" for f in r["failures"])
        return f"<h3>Recompiled because these guards failed</h3><ul>{items}</ul>"

    def _breaks(self, r: dict) -> str:
        items = [(b, False) for b in r["breaks"]]
        if r["fallback"] is not None:
            items.append((r["fallback"], True))
        if not items:
            return ""
        html_items = []
        for b, fell_back in items:
            frames = "".join(
                FRAME.format(
                    src=self.location(f["filename"], f["lineno"], f.get("context")),
                    where=self.where(f["filename"], f["lineno"]),
                    function=_e(f["function"]),
                    line=_e(f["line"]),
                )
                for f in b["stack"]
            )
            hint = f"<div class='hint'>hint: {_e(b['hint'])}</div>" if b["hint"] else ""
            html_items.append(
                BREAK.format(
                    cls="bad" if fell_back else "warn",
                    what="ran in Python:" if fell_back else "graph break:",
                    kind=_e(b["kind"]),
                    detail=_e(b["detail"]),
                    stack=frames,
                    hint=hint,
                )
            )
        return "<h3>Graph breaks</h3>" + "\n".join(html_items)

    def _speculated(self, r: dict) -> str:
        sites = r.get("speculated") or []
        if not sites:
            return ""
        items = "".join(
            f'<li><a href="#{self.location(s["filename"], s["lineno"])}">'
            f"{self.where(s['filename'], s['lineno'])}</a> in <code>{_e(s['function'])}</code>: "
            f"{_count(s['hits'], 'hit')}, {_count(s['misses'], 'miss', 'misses')}"
            f"{' (no longer speculated)' if s['disabled'] else ''}"
            f"<br><code>{_e(s['line'])}</code></li>"
            for s in sites
        )
        return (
            "<h3>Speculated branches (checked after the graph; a miss reruns the call in Python)"
            f"</h3><ul>{items}</ul>"
        )

    def _bytecode(self, r: dict) -> str:
        code = r["bytecode"]
        original = f"<div><h3>Original</h3><pre>{_e(code['original'])}</pre></div>"
        rewritten = (
            f"<div><h3>Rewritten</h3><pre>{_e(code['rewritten'])}</pre></div>"
            if code["rewritten"]
            else "<div><h3>Rewritten</h3><p class='muted'>none: the call ran in Python</p></div>"
        )
        columns = f"<div class='cols'>{original}{rewritten}</div>"
        return f"<details><summary>Bytecode</summary>{columns}</details>"

    # -- sources --------------------------------------------------------------------------------
    def location(self, filename: str, lineno: int, context: list | None = None) -> str:
        """The anchor of the source excerpt for ``filename:lineno`` (created on first use)."""
        key = (filename, lineno)
        if key not in self.locations:
            self.locations[key] = (f"src-{len(self.locations)}", context or [])
        elif context and not self.locations[key][1]:
            self.locations[key] = (self.locations[key][0], context)
        return self.locations[key][0]

    def sources_html(self) -> Iterable[str]:
        functions = {(f["filename"], f["lineno"]): f for f in self.info.values()}
        for (filename, lineno), (anchor, context) in self.locations.items():
            rows = context or _function_rows(functions.get((filename, lineno)))
            if not rows:
                rows = [[lineno, "(source not available)"]]
            lines = "".join(
                f"<span class='hl'>{n:5d}  {_e(text)}</span>"
                if n == lineno
                else f"{n:5d}  {_e(text)}\n"
                for n, text in rows
            )
            yield SOURCE.format(anchor=anchor, where=self.where(filename, lineno), lines=lines)

    def where(self, filename: str, lineno: int) -> str:
        """``file:line`` with the common directory left out (the full path as its tooltip)."""
        inside = self.prefix and filename.startswith(self.prefix)
        short = filename[len(self.prefix) :] if inside else filename
        return f'<span title="{_e(filename)}">{_e(short)}:{lineno}</span>'

    # -- lookups --------------------------------------------------------------------------------
    def _function(self, key: str) -> dict:
        return self.info.get(key) or {"name": f"<function {key}>", "filename": "?", "lineno": 0}

    def _all_entries(self, key: str) -> list[dict]:
        """Entries of ``key`` and of its resume functions."""
        return [r for k in [key, *self.resumes.get(key, [])] for r in self.entries.get(k, [])]


def _key(record: dict, serial: int) -> str:
    return f"{record.get('pid', 0)}-{serial}"


def _anchor(*parts: Any) -> str:
    return "-".join(str(p) for p in parts)


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _common_dir(filenames: list[str]) -> str:
    """The directory (ending in a separator) all real files share, or "" (one file: its folder)."""
    paths = [f for f in set(filenames) if os.path.isabs(f)]
    if not paths:
        return ""
    common = os.path.dirname(paths[0]) if len(paths) == 1 else os.path.commonpath(paths)
    return common.rstrip(os.sep) + os.sep if common not in ("", os.sep) else ""


def _shown_dir(directory: str) -> str:
    """``directory`` as the page names it: relative to the working directory when inside it
    (``examples/``, or ``the working directory`` itself), else under ``~`` when inside the home
    directory; a page shared from another machine then shows no path of this one."""
    cwd, home = os.getcwd(), os.path.expanduser("~")
    for base, shown in ((cwd, ""), (home, "~" + os.sep)):
        inside = directory == base + os.sep or directory.startswith(base.rstrip(os.sep) + os.sep)
        if base not in ("", os.sep) and inside:
            rest = directory[len(base.rstrip(os.sep)) + 1 :]
            return shown + rest if shown or rest else "the working directory"
    return directory


def _seconds(r: dict) -> float:
    return r["timings"]["trace_s"] + r["timings"]["backend_s"]


def _block(title: str, text: str) -> str:
    if not text:
        return ""
    return f"<details><summary>{_e(title)}</summary><pre>{_e(text)}</pre></details>"


def _settings_text(settings: dict) -> str:
    parts = [f"backend={settings.get('backend')}"]
    for name in ("mode", "fullgraph", "dynamic"):
        if settings.get(name) not in (None, False):
            parts.append(f"{name}={settings[name]}")
    if settings.get("options"):
        parts.append(f"options={settings['options']}")
    return ", ".join(parts)


def _function_rows(fn: dict | None) -> list[list[Any]]:
    source = (fn or {}).get("source")
    if not source:
        return []
    return [[source["lineno"] + i, text] for i, text in enumerate(source["lines"])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bytegraph.report",
        description="Build one HTML page from the records BYTEGRAPH_TRACE_DIR=dir wrote.",
    )
    parser.add_argument("trace_dir", help="the directory BYTEGRAPH_TRACE_DIR pointed at")
    parser.add_argument("-o", "--output", help="where to write the page (default: DIR/report.html)")
    args = parser.parse_args(argv)
    trace_dir = Path(args.trace_dir)
    if not trace_dir.is_dir():
        parser.error(f"{trace_dir} is not a directory")
    if not any(trace_dir.glob("bytegraph-*.jsonl")):
        parser.error(f"{trace_dir} holds no bytegraph records (bytegraph-<pid>.jsonl)")
    out = write_html(args.output or trace_dir / "report.html", trace_dir)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
