"""The compile report: ``BYTEGRAPH_TRACE_DIR`` records, ``python -m bytegraph.report dir`` and
``bytegraph.report.write_html``, and the page itself opened in headless Chromium (no script errors,
every link resolves, a link into a collapsed section opens it). Chromium tests skip, saying so,
where the ``chromium`` binary is absent (``.ci/run`` installs Debian's package).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from html.parser import HTMLParser
from pathlib import Path

import pytest
import torch
from bytegraph.tracer.driver import CompileEvent
from bytegraph.tracer.exc import Unsupported, UserLocation

import bytegraph
from bytegraph import report, trace_records

SCRIPT = textwrap.dedent(
    """
    import warnings
    import torch
    import bytegraph

    warnings.simplefilter("ignore")
    bytegraph.config.speculate = False  # the branch on data below is a break the report shows

    @torch.compiler.disable
    def log_stats(t):
        print("mean", t.mean().item())

    def step(x, n):
        y = torch.relu(x) * n
        log_stats(y)
        if y.sum() > 0:
            y = y + 1
        return y.cos()

    def fused(x):
        return (x * 2 + 1).relu()

    compiled = bytegraph.compile(step, name="train_step")
    for n in (1, 2, 3):
        compiled(torch.randn(8), n)
    bytegraph.compile(fused, backend="triton")(torch.randn(16))
    """
)


@pytest.fixture(scope="module")
def trace_dir(tmp_path_factory) -> Path:
    """One traced run of ``SCRIPT`` (triton under its interpreter, so kernels are generated)."""
    root = tmp_path_factory.mktemp("report")
    (root / "train.py").write_text(SCRIPT)
    env = {**os.environ, "BYTEGRAPH_TRACE_DIR": str(root / "trace"), "TRITON_INTERPRET": "1"}
    env.pop("BYTEGRAPH_LOGS", None)
    proc = subprocess.run(
        [sys.executable, "train.py"], cwd=root, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    return root / "trace"


@pytest.fixture(scope="module")
def records(trace_dir) -> list[dict]:
    return trace_records.read_dir(trace_dir)


@pytest.fixture(scope="module")
def page(trace_dir) -> Path:
    proc = subprocess.run(
        [sys.executable, "-m", "bytegraph.report", str(trace_dir)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    out = trace_dir / "report.html"
    assert proc.stdout.strip() == str(out)
    return out


def line_of(text: str) -> int:
    """The line number in ``SCRIPT`` of the line that reads ``text`` once stripped."""
    return [line.strip() for line in SCRIPT.splitlines()].index(text) + 1


def roots(records, name):
    return [r for r in records if r["function"]["name"] == name]


# -- records -------------------------------------------------------------------------------------


def test_trace_dir_has_one_file_per_process_with_json_lines(trace_dir):
    (file,) = trace_dir.glob("bytegraph-*.jsonl")
    lines = file.read_text().splitlines()
    assert lines and all(json.loads(line)["type"] == "compile" for line in lines)


def test_records_name_the_function_and_its_settings(records):
    first = roots(records, "train_step")[0]
    fn = first["function"]
    assert fn["qualname"] == "step" and fn["lineno"] == line_of("def step(x, n):")
    assert fn["filename"].endswith("train.py")
    assert fn["source"]["lines"][0] == "def step(x, n):"
    assert fn["settings"]["backend"] == "auto"


def test_records_keep_breaks_with_file_line_source_and_hint(records):
    breaks = [b for r in records for b in r["breaks"]]
    kinds = {b["kind"] for b in breaks}
    assert {"disabled", "data_dependent"} <= kinds
    disabled = next(b for b in breaks if b["kind"] == "disabled")
    (frame,) = disabled["stack"]
    assert frame["lineno"] == line_of("log_stats(y)") and frame["line"] == "log_stats(y)"
    assert [frame["lineno"], "    log_stats(y)"] in frame["context"]
    data = next(b for b in breaks if b["kind"] == "data_dependent")
    assert data["hint"] and data["stack"][-1]["line"] == "if y.sum() > 0:"


def test_records_keep_recompile_reasons(records):
    recompiles = [r for r in roots(records, "train_step") if r["failures"]]
    assert recompiles and recompiles[0]["failures"] == ["L['n'] == 1"]


def test_records_keep_graph_code_guards_and_the_guard_function(records):
    first = roots(records, "train_step")[0]
    assert "torch.relu" in first["graphs"][0]["code"]
    assert "L['n'] == 1" in first["guards"]
    assert first["guard_function"].startswith("def __guard_step")


def test_records_keep_resume_functions_under_their_function(records):
    root = roots(records, "train_step")[0]["function"]
    resumes = [
        r
        for r in records
        if r["function"]["root"] == root["serial"] and r["function"]["serial"] != root["serial"]
    ]
    assert resumes
    assert all(r["function"]["qualname"].startswith("__resume_at_") for r in resumes)
    assert "LOAD_FAST" in resumes[0]["bytecode"]["original"]
    assert resumes[0]["bytecode"]["rewritten"]


def test_records_keep_timings(records):
    for r in records:
        t = r["timings"]
        assert t["trace_s"] > 0 and t["backend_s"] >= 0
        assert t["guard_us"] is not None and t["guard_us"] > 0


def test_records_keep_triton_kernel_sources(records):
    (fused,) = roots(records, "fused")
    (graph,) = fused["kernels"]
    assert graph["kernels"], "the triton backend generated no kernel"
    assert "@triton.jit" in graph["kernels"][0]["source"]
    assert graph["wrapper"]


def test_a_fallback_is_recorded_and_shown_with_its_reason():
    fn = bytegraph.compile(lambda x: x + 1)
    fn(torch.ones(1))
    state = bytegraph.state_of(fn)
    reason = Unsupported("opcode", "no handler for X", hint="rewrite it")
    reason.user_stack = [UserLocation(__file__, 1, "<module>")]
    record = trace_records.compile_record(state, CompileEvent("first call", unsupported=reason), 1)
    assert record["fallback"]["kind"] == "opcode" and record["fallback"]["hint"] == "rewrite it"
    assert record["bytecode"]["rewritten"] == "" and record["graphs"] == []
    text = report.render([record])
    assert "ran in Python:" in text and "none: the call ran in Python" in text


# -- the page --------------------------------------------------------------------------------


def test_module_entry_point_writes_report_html(page):
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>")
    assert "train_step" in text and "log_stats(y)" in text


def test_page_shows_every_part(page, records):
    text = page.read_text()
    for part in (
        "Compiled functions",
        "Graph breaks",
        "Recompiled because these guards failed",
        "Resume functions",
        "Generated guard function",
        "Bytecode",
        "Generated code",
        "triton_",
        "hint:",
        "µs/call",
    ):
        assert part in text, part


def test_summary_names_paths_relative_to_the_working_directory(records, trace_dir, monkeypatch):
    """A page shows no absolute path of the machine it was made on: the files' common folder is
    named relative to the working directory (or under ``~``)."""
    script_dir = trace_dir.parent
    monkeypatch.chdir(script_dir)
    assert "Paths are relative to the working directory." in report.render(records)
    monkeypatch.chdir(script_dir.parent)
    text = report.render(records)
    assert f"Paths are relative to {script_dir.name}/." in text
    assert f"relative to {script_dir}" not in text
    monkeypatch.setenv("HOME", str(script_dir.parent))
    monkeypatch.chdir("/")
    assert f"Paths are relative to ~/{script_dir.name}/." in report.render(records)


def test_write_html_in_process_uses_live_functions(tmp_path):
    fn = bytegraph.compile(lambda x: torch.sin(x) + 1, name="live_fn")
    fn(torch.ones(2))
    out = report.write_html(tmp_path / "live.html")
    text = out.read_text()
    assert "live_fn" in text and "torch.sin" in text


def test_write_html_of_nothing_says_so(tmp_path):
    bytegraph.reset()
    text = report.write_html(tmp_path / "empty.html").read_text()
    assert "No compiles were recorded" in text


def test_many_functions_are_indexed_and_collapsed():
    fns = [bytegraph.compile(eval(f"lambda x: x + {i}"), name=f"fn_{i:02d}") for i in range(30)]
    for fn in fns:
        fn(torch.ones(1))
    links = parse(report.render(trace_records.in_process()))
    names = {f"fn_{i:02d}" for i in range(30)}
    assert names <= set(links.named)  # an index row and a section each
    assert {t for t in links.targets if t.startswith("fn-")} <= links.ids
    assert links.details and not any(is_open for is_open, _ in links.details)  # no breaks: closed


def test_main_refuses_a_directory_without_records(tmp_path, capsys):
    with pytest.raises(SystemExit):
        report.main([str(tmp_path)])
    assert "holds no bytegraph records" in capsys.readouterr().err


# -- in a browser -----------------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None and os.environ.get("BYTEGRAPH_REQUIRE_CHROMIUM") == "1":
    raise RuntimeError("BYTEGRAPH_REQUIRE_CHROMIUM=1 (as in CI) but no chromium binary is on PATH")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="headless Chromium not found (install Debian's 'chromium' package; .ci/run does)",
)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
]


def browse(url: str, tmp_path: Path, *extra: str) -> tuple[str, list[str]]:
    """Load ``url`` in headless Chromium: (the DOM after its scripts ran, console errors)."""
    profile = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}"
    proc = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *extra, url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    errors = [
        line
        for line in proc.stderr.splitlines()
        if ":CONSOLE" in line and ("Uncaught" in line or "Error" in line)
    ]
    return proc.stdout, errors


class Links(HTMLParser):
    """Ids, in-page link targets, and the ``open`` state of each <details> with the ids inside."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.targets: list[str] = []
        self.details: list[tuple[bool, set[str]]] = []
        self.open_stack: list[tuple[bool, set[str]]] = []
        self.named: dict[str, set[bool]] = {}  #: data-name -> {shown?} over its elements

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "data-name" in attrs:
            hidden = "hidden" in (attrs.get("class") or "").split()
            self.named.setdefault(attrs["data-name"], set()).add(not hidden)
        if "id" in attrs:
            self.ids.add(attrs["id"])
            for _, inner in self.open_stack:
                inner.add(attrs["id"])
        href = attrs.get("href") or ""
        if href.startswith("#"):
            self.targets.append(href[1:])
        if tag == "details":
            self.open_stack.append(("open" in attrs, set()))

    def handle_endtag(self, tag):
        if tag == "details":
            self.details.append(self.open_stack.pop())


def parse(dom: str) -> Links:
    links = Links()
    links.feed(dom)
    return links


@needs_chromium
def test_page_renders_without_script_errors_and_links_resolve(page, tmp_path):
    dom, errors = browse(page.as_uri(), tmp_path, "--dump-dom")
    assert errors == []
    links = parse(dom)
    assert len(links.targets) > 10
    assert set(links.targets) <= links.ids, set(links.targets) - links.ids
    assert "train_step" in dom


@needs_chromium
def test_link_into_a_collapsed_section_opens_it(page, tmp_path):
    closed = parse(page.read_text())
    target = next(ids for is_open, ids in closed.details if not is_open and ids)
    anchor = sorted(target)[0]
    dom, errors = browse(page.as_uri() + "#" + anchor, tmp_path, "--dump-dom")
    assert errors == []
    after = parse(dom)
    assert all(is_open for is_open, ids in after.details if anchor in ids)


@needs_chromium
def test_page_screenshot_is_drawn(page, tmp_path):
    shot = tmp_path / "report.png"
    _, errors = browse(page.as_uri(), tmp_path, f"--screenshot={shot}", "--window-size=1000,700")
    assert errors == []
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # a drawn page, not a blank one


@needs_chromium
def test_browser_check_catches_a_script_error_and_a_broken_link(tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text('<a href="#nowhere">x</a><script>notDefined();</script>')
    dom, errors = browse(bad.as_uri(), tmp_path, "--dump-dom")
    assert errors and "notDefined" in errors[0]
    links = parse(dom)
    assert set(links.targets) - links.ids == {"nowhere"}


def with_actions(page: Path, tmp_path: Path, actions: str) -> Path:
    """A copy of the report that runs ``actions`` (JavaScript) after the page's own script."""
    copy = tmp_path / "acted.html"
    copy.write_text(page.read_text().replace("</body>", f"<script>{actions}</script></body>"))
    return copy


@needs_chromium
def test_expand_all_and_collapse_all_buttons(page, tmp_path):
    expanded = with_actions(page, tmp_path, 'document.getElementById("expand-all").click();')
    dom, errors = browse(expanded.as_uri(), tmp_path, "--dump-dom")
    assert errors == []
    assert all(is_open for is_open, _ in parse(dom).details)
    collapsed = with_actions(page, tmp_path, 'document.getElementById("collapse-all").click();')
    dom, errors = browse(collapsed.as_uri(), tmp_path, "--dump-dom")
    assert errors == [] and not any(is_open for is_open, _ in parse(dom).details)


@needs_chromium
def test_filter_hides_other_functions(page, tmp_path):
    actions = (
        'var f = document.getElementById("filter"); f.value = "fused";'
        'f.dispatchEvent(new Event("input"));'
    )
    dom, errors = browse(with_actions(page, tmp_path, actions).as_uri(), tmp_path, "--dump-dom")
    assert errors == []
    shown = parse(dom).named
    assert shown["fused"] == {True} and shown["train_step"] == {False}
