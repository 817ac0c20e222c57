"""Import every promptfoo config under a folder and check the result with `evalh run --dry-run`.

    python -m tests.support.import_promptfoo_examples EXAMPLES_DIR [OUT_DIR]

For each ``promptfooconfig*.yaml``: the import's outcome (a bad-input line, or its report's
error and note counts) and whether ``evalh run --dry-run`` accepts the written eval. Prints one
line per config and the number that imported with no error in the report and passed the dry run.
Keys are dummies (the dry run contacts nothing).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from evalh_pipeline.importers.promptfoo import import_promptfoo
from evalh_pipeline.importers.report import BadSource
from evalh_pipeline.importers.writing import write_tree

EVALH = [sys.executable, "-m", "evalh_pipeline.cli"]


def check(config: Path, out: Path) -> tuple[bool, str]:
    """(clean, one line): clean when the report has no error and the dry run passes."""
    try:
        imported = import_promptfoo(config, config.parent.name)
        write_tree(out, imported.files())
    except BadSource as exc:
        return False, f"bad input: {exc}"
    errors = imported.report.errors
    env = {**os.environ, "OPENAI_API_KEY": "sk-dry-run", "ANTHROPIC_API_KEY": "sk-dry-run"}
    ran = subprocess.run([*EVALH, "run", str(out / "eval.yaml"), "--dry-run"], env=env, cwd=out,
                         capture_output=True, text=True, timeout=300)
    dry = "dry run ok" if ran.returncode == 0 else f"dry run failed: {(ran.stderr.strip().splitlines() or [''])[-1]}"
    notes = len(imported.report.findings) - len(errors)
    first = f" (first: {errors[0].text()})" if errors else ""
    return not errors and ran.returncode == 0, f"{len(errors)} error(s), {notes} note(s); {dry}{first}"


def main(argv: list[str]) -> int:
    root = Path(argv[0])
    out_root = Path(argv[1]) if len(argv) > 1 else Path(tempfile.mkdtemp(prefix="pf-import-"))
    configs = sorted(root.rglob("promptfooconfig*.yaml"))
    clean = 0
    for config in configs:
        ok, line = check(config, out_root / config.parent.relative_to(root) / config.stem)
        clean += ok
        print(f"{'OK ' if ok else '-- '} {config.relative_to(root)}: {line}")
    print(f"{clean} of {len(configs)} configs imported with no error and passed evalh run --dry-run")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
