"""The distribution ships every module. ``pyproject.toml`` lists its packages by hand (the
package-dir mapping puts ``tracer/`` at ``bytegraph.tracer`` and so on), so a folder added or
removed without updating the list breaks a fresh install while an old editable install goes on
working. These tests compare the list with the folders, and build a wheel from a clean copy."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def package_folders() -> dict[str, Path]:
    """Every package the package-dir mapping reaches (a folder holding ``__init__.py``)."""
    found = {}
    for name, folder in SETUPTOOLS["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder)
            found[".".join((name, *relative.parts))] = init.parent
    return found


def test_listed_packages_are_the_folders_with_an_init():
    listed, on_disk = set(SETUPTOOLS["packages"]), set(package_folders())
    assert listed == on_disk, (
        f"pyproject.toml lists packages with no folder: {sorted(listed - on_disk)}; "
        f"folders missing from the list: {sorted(on_disk - listed)}"
    )


def test_a_wheel_built_from_a_clean_copy_holds_every_module(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(".git", "*.egg-info", "build", "dist", "__pycache__"),
    )
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    built = subprocess.run(
        [*command, "-w", str(tmp_path / "dist"), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("bytegraph-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        "/".join((*package.split("."), module.name))
        for package, folder in package_folders().items()
        for module in folder.glob("*.py")
    }
    assert expected <= shipped, f"missing from the wheel: {sorted(expected - shipped)[:20]}"
