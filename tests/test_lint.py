"""The code passes ruff with the project's configuration (pyproject.toml)."""

import subprocess
import sys

from tests.conftest import REPO


def test_ruff_is_clean():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "."], cwd=REPO, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
