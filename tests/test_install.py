"""How the development install (`make run`, `make test`) makes rawtrio importable.

The packages sit at the top of the repository; `pyproject.toml` maps the root package
folder to ".", so setuptools' editable install is one static path entry in a `.pth` file.
Without that mapping it installs an import hook (a meta path finder module imported by
`site` at every interpreter start), which cost every `rawtrio` command 20-30 ms of CPU
on the development machine before any of its own code ran.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_rawtrio_is_found_without_an_import_hook(tmp_path: Path) -> None:
    probe = (
        "import json, sys, rawtrio; "
        "print(json.dumps({'finders': [type(f).__module__ for f in sys.meta_path], "
        "'hooked': sorted(m for m in sys.modules if m.startswith('__editable__'))}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,  # not the repository: it must be found through the install
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    seen = json.loads(done.stdout)
    assert seen["hooked"] == [], seen
    assert not [f for f in seen["finders"] if "editable" in f], seen
