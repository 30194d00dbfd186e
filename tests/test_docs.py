"""The README is the front door and docs/ the rest, by reader: the site builds with `mkdocs build --strict`
(every link and every heading a link names is there), and the README's two commands are the ones CI runs
and a GPU-less Linux machine wants."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

MKDOCS = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir"]
START = ("python3 -m venv .venv && .venv/bin/pip install -c constraints.txt --extra-index-url "
         "https://download.pytorch.org/whl/cpu -e . && . .venv/bin/activate && kata next")


def build(root: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*MKDOCS, str(site)], cwd=root, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


def first_block(markdown: str, heading: str) -> str:
    """The first ```bash block under `heading`."""
    section = markdown.split(f"\n{heading}\n", 1)[1]
    return re.search(r"```bash\n(.*?)\n```", section, re.DOTALL).group(1)


def test_the_site_builds_strictly_and_a_broken_link_fails_it(tmp_path):
    pytest.importorskip("mkdocs")
    done = build(REPO, tmp_path / "site")
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "students" / "index.html").is_file()
    copy = tmp_path / "copy"
    shutil.copytree(REPO / "docs", copy / "docs")
    shutil.copy2(REPO / "mkdocs.yml", copy / "mkdocs.yml")
    page = copy / "docs" / "students.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nSee [the map](authors.md#no-such-heading).\n",
                    encoding="utf-8")
    broken = build(copy, tmp_path / "broken")
    assert broken.returncode != 0 and "no-such-heading" in broken.stdout + broken.stderr


def test_the_readme_is_a_front_door_whose_links_lead_into_the_docs():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 150
    for heading in ("## Start learning", "## Run the tests", "## The katas", "## Your commands"):
        assert f"\n{heading}\n" in readme
    links = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert {"docs/students.md", "docs/instructors.md", "docs/authors.md", "docs/security.md",
            "docs/performance.md", "docs/assets/kata-viz-9.4.png"} <= set(links)
    assert all((REPO / link).is_file() for link in links)


def test_the_start_command_takes_the_cpu_build_and_the_test_command_is_cis():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert first_block(readme, "## Start learning") == START
    assert first_block((REPO / "docs" / "index.md").read_text(encoding="utf-8"), "## Start learning") == START
    assert "leave `--extra-index-url https://download.pytorch.org/whl/cpu` out" in " ".join(readme.split())
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert first_block(readme, "## Run the tests") == f"python3 -m venv .venv && {ci}"
