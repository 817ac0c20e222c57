"""The Dagster layer: the only package that imports dagster.

``definitions.build_definitions`` arranges the engine's stages as assets, partitions and
jobs; ``launch`` materializes them against a Dagster instance for the CLI.
"""

import warnings

import dagster as dg

# Backfill policies, the multi-to-single partition mapping and partitioned asset checks
# are the design, not an experiment of ours; Dagster's beta/preview notice on every load
# is noise for users (the closing notes track that these APIs may still change).
warnings.filterwarnings("ignore", category=dg.BetaWarning)
warnings.filterwarnings("ignore", category=dg.PreviewWarning)
