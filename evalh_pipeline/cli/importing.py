"""`evalh import`: bring evals written for other tools (openai/evals' registry, promptfoo) into evalh."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from evalh_pipeline.cli.group import EXIT_CONFIG, main
from evalh_pipeline.terminal import err, error, escape_control, say

if TYPE_CHECKING:
    from evalh_pipeline.importers.writing import ImportedFiles


def _import(source: Path, out: Path, strict: bool, read: Callable[[], list[ImportedFiles]],
            check: Callable[[Path], None] | None = None) -> list[ImportedFiles]:
    """Import ``source`` into ``out`` as every ``evalh import`` does: refuse a non-empty ``out``,
    ``read`` the source (a :class:`BadSource` is one line), print every finding, refuse with
    ``--strict`` if there is any, write the evals (all or nothing, ``check`` seeing each eval's
    folder first) and say what was written where. Returns the evals written."""
    from evalh_pipeline.config import ConfigError
    from evalh_pipeline.importers.report import REPORT_NAME, BadSource
    from evalh_pipeline.importers.writing import check_target, write_imports

    try:
        check_target(out)
        imported = read()
    except BadSource as exc:
        error(str(exc))
        sys.exit(EXIT_CONFIG)
    findings = [finding for found in imported for finding in found.report.findings]
    for finding in findings:
        # Each line names its own severity (`file:line: error|note: ...`): no second prefix.
        err.line(escape_control(finding.text()))
    if strict and findings:
        error(f"{source}: {len(findings)} construct(s) do not map (--strict); nothing written")
        sys.exit(EXIT_CONFIG)
    try:
        folders = write_imports(out, imported, check)
    except (BadSource, ConfigError) as exc:
        error(f"the imported eval does not load, nothing written: {exc}")
        sys.exit(EXIT_CONFIG)
    for found, folder in zip(imported, folders):
        say(f"imported {found.name}: {found.cases} case(s), {found.report.counts()} -> {folder / 'eval.yaml'} "
            f"(report: {folder / REPORT_NAME})")
    return imported


@main.group("import")
def import_group() -> None:
    """Import an eval written for another tool: an eval.yaml, its cases and import-report.md
    (every construct that does not map, with its file and line)."""


@import_group.command("openai-evals")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--output", "out", type=click.Path(path_type=Path), required=True,
              help="The folder to create (absent or empty). With several evals, one subfolder per eval.")
@click.option("--data", type=click.Path(file_okay=False, path_type=Path),
              help="Where samples_jsonl paths are resolved (default: the registry's data/ folder).")
@click.option("--model", "models", multiple=True,
              help="A model to evaluate, as an http system (openai_chat); repeat for several variants "
                   "(default: gpt-4o-mini).")
@click.option("--grader-model", help="The model that grades ModelBasedClassify evals (default: the first --model, "
                                     "as openai/evals grades with the model under test).")
@click.option("--eval", "only", help="Import only this eval of PATH.")
@click.option("--strict", is_flag=True, help="Any construct that does not map is an error (nothing is written).")
def import_openai_evals(path: Path, out: Path, data: Path | None, models: tuple[str, ...], grader_model: str | None,
                        only: str | None, strict: bool) -> None:
    """Import the evals of PATH, a file of openai/evals' legacy registry (evals/registry/evals/*.yaml):
    samples become cases (chat input; ideal as each case's own evaluator: Match, Includes,
    FuzzyMatch, ModelBasedClassify with the registry's modelgraded specs); each model an http system whose endpoint is ${OPENAI_BASE_URL} (default
    OpenAI's) and key ${OPENAI_API_KEY}, read when the eval runs, never written.

    PATH may also be a JSON export of OpenAI's hosted Evals (an object with "object": "eval",
    with its runs and output items): items become cases, string_check criteria their evaluators,
    the output items baseline.yaml, which replays them."""
    from evalh_pipeline.importers.openai_evals.hosted import BASELINE_EVAL, import_hosted_export, is_hosted_export
    from evalh_pipeline.importers.openai_evals.importer import import_registry_file
    from evalh_pipeline.importers.report import BadSource
    from evalh_pipeline.importers.writing import check_loads

    def read() -> list[ImportedFiles]:
        if is_hosted_export(path):
            given = [flag for flag, value in (("--data", data), ("--eval", only), ("--grader-model", grader_model))
                     if value is not None]
            if given:
                raise BadSource(str(path), None, "", f"{', '.join(given)}: for registry files only, not for a "
                                                     "hosted Evals export (its graders name their models)")
            return [import_hosted_export(path, models=list(models) or None)]
        return import_registry_file(path, data=data, models=list(models) or None, only=only,
                                    grader_model=grader_model)

    def check(folder: Path) -> None:
        check_loads(folder, {"OPENAI_API_KEY": "placeholder-key"})
        if (folder / BASELINE_EVAL).exists():  # a hosted export's replayable baseline
            check_loads(folder, {}, BASELINE_EVAL)

    _import(path, out, strict, read, check)


@import_group.command("promptfoo")
@click.argument("config", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="The folder to write the eval into (new or empty).")
@click.option("--results", "results", type=click.Path(dir_okay=False, path_type=Path),
              help="promptfoo's results.json: also write promptfoo-baseline.yaml, which replays its outputs.")
@click.option("--strict", is_flag=True, help="Any construct that does not map is an error; nothing is written.")
def import_promptfoo_command(config: Path, out_dir: Path, results: Path | None, strict: bool) -> None:
    """Import a promptfoo config (promptfooconfig.yaml): prompts x providers become variants,
    tests become cases with their assertions; what does not map is listed with file:line."""
    from evalh_pipeline.importers.promptfoo import ImportedEval, import_promptfoo
    from evalh_pipeline.importers.writing import ImportedFiles

    for given in (config, results):
        if given is not None and not given.is_file():
            error(f"{given}: no such file")
            sys.exit(EXIT_CONFIG)
    mapped: list[ImportedEval] = []

    def read() -> list[ImportedFiles]:
        mapped.append(import_promptfoo(config, out_dir.resolve().name, results))
        return [ImportedFiles(mapped[0].name, mapped[0].files(), len(mapped[0].cases), mapped[0].report)]

    _import(config, out_dir, strict, read)
    for line in mapped[0].summary():
        say(line)


@import_group.command("inspect")
@click.argument("log", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--output", "out", type=click.Path(path_type=Path), required=True,
              help="The folder to create (absent or empty).")
@click.option("--variant", default="inspect", show_default=True,
              help="The replay system's name: give two logs of one task the same name so `evalh compare` "
                   "pairs their cases.")
@click.option("--pass-threshold", type=float, default=1.0, show_default=True,
              help="A score passes when its value (C=1, P=0.5, I/N=0, numbers and booleans as they are) "
                   "is at least this.")
@click.option("--model", default=None, metavar="MODEL",
              help="Also write OUT/live.yaml: the samples sent afresh to MODEL (OpenAI-compatible chat at "
                   "$OPENAI_BASE_URL, key $OPENAI_API_KEY), judged by the log's scorers, for `evalh compare` "
                   "with the replay.")
@click.option("--strict", is_flag=True, help="Any construct that does not map is an error (nothing is written).")
def import_inspect(log: Path, out: Path, variant: str, pass_threshold: float, model: str | None,
                   strict: bool) -> None:
    """Import LOG, an Inspect AI log (.eval or .json): samples become cases carrying the recorded
    output, replayed offline by the `replay` system; each scorer an evaluator that passes as the
    log scored it. `evalh run OUT/eval.yaml` reproduces the log without calling any model;
    with --model, `evalh run OUT/live.yaml` runs the samples afresh (`evalh compare` pairs the two)."""
    from evalh_pipeline.importers.inspect_log import LIVE_EVAL, import_inspect_log
    from evalh_pipeline.importers.writing import check_loads

    def check(folder: Path) -> None:
        check_loads(folder, {})
        if (folder / LIVE_EVAL).exists():  # the samples run afresh against --model
            check_loads(folder, {"OPENAI_API_KEY": "placeholder-key"}, LIVE_EVAL)

    _import(log, out, strict,
            lambda: [import_inspect_log(log, variant=variant, pass_threshold=pass_threshold, live_model=model)], check)
