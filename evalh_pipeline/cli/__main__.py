"""`python -m evalh_pipeline.cli`: the same as the `evalh` entry point."""

from evalh_pipeline.cli import console_main

console_main()
