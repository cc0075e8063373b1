"""A script run as a file puts its folder first on ``sys.path``, where libraries probing for
optional packages find it: transformers imported ``benchmarks/kernels.py`` as the Hugging Face
``kernels`` package, which changed the models every benchmark measured and slowed their first
calls. So no script in ``benchmarks/`` or ``examples/`` may be importable in place of a package:
neither one installed, nor one torch or transformers looks for when building a model."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("benchmarks", "examples")
SCRIPTS = sorted(p for folder in FOLDERS for p in (ROOT / folder).glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_script_does_not_shadow_an_installed_module(script: Path, monkeypatch):
    outside = [p for p in sys.path if p and not Path(p).resolve().is_relative_to(ROOT)]
    monkeypatch.setattr(sys, "path", outside)  # what a user's environment has
    name = script.stem
    assert name not in sys.builtin_module_names, f"{script.relative_to(ROOT)} shadows {name!r}"
    spec = importlib.util.find_spec(name)
    found = (
        [] if spec is None else [spec.origin] if spec.origin else spec.submodule_search_locations
    )
    theirs = [p for p in found or [] if not Path(p).resolve().is_relative_to(ROOT)]
    # (import hooks of the editable install still find this checkout's test folders)
    assert theirs == [], f"{script.relative_to(ROOT)} shadows the installed module {name!r}"


_PROBE = """
import sys, warnings
warnings.filterwarnings("ignore")
sys.path[:0] = {folders!r}
import torch, transformers
config = transformers.LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
    num_attention_heads=2, num_key_value_heads=1, vocab_size=64)
model = transformers.LlamaForCausalLM(config)
model(input_ids=torch.zeros(1, 4, dtype=torch.long))
print([name for name, m in list(sys.modules.items())
       if any(str(getattr(m, "__file__", None) or "").startswith(f + "/") for f in {folders!r})])
"""


def test_building_a_model_imports_no_script():
    pytest.importorskip("transformers")
    code = _PROBE.format(folders=[str(ROOT / f) for f in FOLDERS])
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout
