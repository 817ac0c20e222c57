"""The Dagster code location: `dagster dev -w workspace.yaml` loads `defs` from here.

Every `eval.yaml` under `evals/` beside this file (or under `$EVALH_EVALS_DIR`) becomes an
asset group.
"""

from pathlib import Path

from evalh_pipeline.defs.definitions import load_code_location

defs = load_code_location(default_evals_dir=Path(__file__).resolve().parent / "evals")
