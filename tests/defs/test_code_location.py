"""The code location loads the way `dagster dev -w workspace.yaml` loads it."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.paths import REPO


def test_dagster_definitions_validate_passes(tmp_path):
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path)}
    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    proc = subprocess.run(
        [sys.executable, "-m", "dagster", "definitions", "validate", "-w", "workspace.yaml"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Validation successful for code location evalh_pipeline" in proc.stderr + proc.stdout


def test_code_location_serves_the_bundled_evals(monkeypatch):
    import dagster as dg

    monkeypatch.delenv("EVALH_EVALS_DIR", raising=False)
    monkeypatch.chdir(REPO.parent)  # discovery must not depend on the working directory
    sys.modules.pop("definitions", None)
    monkeypatch.syspath_prepend(str(REPO))
    import definitions

    keys = definitions.defs.resolve_asset_graph().get_all_asset_keys()
    assert dg.AssetKey(["quickstart", "summary"]) in keys
