"""What a command imports: the module names loaded after ``mlf_spec.cli.main(argv)`` in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys


def modules_after(argv: list[str]) -> set[str]:
    """The names in ``sys.modules`` after running the CLI with ``argv`` in a fresh interpreter."""
    code = ("import sys\nfrom mlf_spec.cli import main\n"
            f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
            "print('MODULES:' + ','.join(sorted(sys.modules)))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    line = [x for x in r.stdout.splitlines() if x.startswith("MODULES:")][-1]
    return set(line[len("MODULES:"):].split(","))
