"""`evalh import`: bring an eval written for another tool (promptfoo) into evalh."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from evalh_pipeline.cli.group import EXIT_CONFIG, main
from evalh_pipeline.terminal import error, say, warning


@main.group("import")
def import_group() -> None:
    """Import an eval from another tool: writes eval.yaml, its cases and import-report.md."""


@import_group.command("promptfoo")
@click.argument("config", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="The folder to write the eval into (new or empty).")
@click.option("--results", "results", type=click.Path(dir_okay=False, path_type=Path),
              help="promptfoo's results.json: also write promptfoo-baseline.yaml, which replays its outputs.")
@click.option("--strict", is_flag=True, help="Any construct that does not map is an error; nothing is written.")
def import_promptfoo_command(config: Path, out_dir: Path, results: Path | None, strict: bool) -> None:
    """Import a promptfoo config (promptfooconfig.yaml): prompts x providers become variants,
    tests become cases with their assertions; what does not map is listed with file:line."""
    from evalh_pipeline.importers.promptfoo import PromptfooImportError, import_promptfoo, write_import

    for given in (config, results):
        if given is not None and not given.is_file():
            error(f"{given}: no such file")
            sys.exit(EXIT_CONFIG)
    try:
        imported = import_promptfoo(config, out_dir.resolve().name, results)
        findings = imported.report.findings
        for finding in findings:
            (error if strict or finding.severity == "error" else warning)(finding.text())
        if strict and findings:
            error(f"{config}: {len(findings)} construct(s) do not map (--strict); nothing written")
            sys.exit(EXIT_CONFIG)
        write_import(imported, out_dir)
    except PromptfooImportError as exc:
        error(str(exc))
        sys.exit(EXIT_CONFIG)
    for line in imported.summary():
        say(line)
    errors = len(imported.report.errors)
    say(f"wrote {out_dir / 'eval.yaml'} ({errors} error(s), {len(findings) - errors} note(s) in "
        f"{out_dir / 'import-report.md'})")
