"""The Dagster layer: the only package that imports dagster.

``definitions.build_definitions`` arranges the engine's stages as assets, checks, jobs and
sensors; ``launch`` materializes them against a Dagster instance for the CLI.
"""
