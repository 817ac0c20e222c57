"""Record a promotion `evalh promote` made in the Dagster instance, as a run of ``<eval>__promote``.

``evalh promote`` writes the baseline pointer itself (the engine, well under a second) and
starts this module as a detached process, so the command does not wait for Dagster's
start-up: ``python -m evalh_pipeline.defs.record_promotion EVAL_YAML RUN_DIR PREVIOUS_RUN_ID``.
Its output goes to the log file the CLI names (beside the pointer).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path


def main(argv: list[str]) -> int:
    eval_path, run_dir, previous = argv
    from evalh_pipeline.common.settings import Settings
    from evalh_pipeline.runner.loading import load_eval
    from evalh_pipeline.store.baselines import baseline_folder
    from evalh_pipeline.store.locking import locked

    directory = Path(run_dir)
    spec = replace(load_eval(eval_path, settings=Settings.from_environment()), runs_root=str(directory.parent))
    # Promotions in quick succession are recorded one at a time, in the order they were
    # made (the lock is taken before the slow Dagster import), and a fresh instance's
    # storage is never created twice at once.
    with locked(baseline_folder(directory.parent, spec.name) / "dagster-record.lock"):
        from evalh_pipeline.defs.launch import local_instance, materialize_promotion

        promotion = materialize_promotion(spec, directory.name, instance=local_instance(),
                                          recorded_previous_run_id=previous)
    print(f"recorded the promotion of {promotion.run_id} as Dagster run {promotion.dagster_run_id}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
