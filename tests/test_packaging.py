"""Installing s3claim prints nothing a new user must read before the demo.

`make demo` logs its install to .venv/install.log and shows it only on failure; what remains
to check is that the package itself builds without warnings of its own (a deprecated
`project.license` table made setuptools print a screenful before the demo once).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_the_package_builds_without_a_warning_from_its_build_backend(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-2000:]
    assert list(tmp_path.glob("s3claim-*.whl"))
    backend = [
        line
        for line in output.splitlines()
        if "Warning" in line and "WARNING: Location" not in line  # the machine's pip config
    ]
    assert backend == []
