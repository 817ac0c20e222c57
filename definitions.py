"""The Dagster code location: `dagster dev -w workspace.yaml` loads `defs` from here."""

from evalh_pipeline.defs.definitions import load_code_location

defs = load_code_location()
