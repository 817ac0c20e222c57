"""The Dagster layer: the only package that imports dagster.

``definitions.build_definitions`` arranges the engine's stages as assets, partitions and
jobs; ``launch`` materializes them against a Dagster instance for the CLI.
"""

import warnings

import dagster as dg

# Backfill policies and the multi-to-single partition mapping are the design, not an
# experiment of ours; Dagster's beta notice on every load is noise for users.
warnings.filterwarnings("ignore", category=dg.BetaWarning)
