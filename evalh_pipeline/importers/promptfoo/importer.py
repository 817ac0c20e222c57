"""``evalh import promptfoo``: read a promptfoo config, map it, write the eval (all or nothing)."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from evalh_pipeline.config.errors import ConfigError
from evalh_pipeline.config.yaml_source import load_yaml
from evalh_pipeline.importers.promptfoo.assertions import Judge
from evalh_pipeline.importers.promptfoo.prompts import read_prompts
from evalh_pipeline.importers.promptfoo.providers import read_providers
from evalh_pipeline.importers.promptfoo.report import ImportReport
from evalh_pipeline.importers.promptfoo.results import BASELINE_CASES, BASELINE_EVAL, attach_results
from evalh_pipeline.importers.promptfoo.source import PromptfooImportError, Source
from evalh_pipeline.importers.promptfoo.tests import read_tests

__all__ = ["ImportedEval", "PromptfooImportError", "import_promptfoo", "write_import"]

_CONFIG_KEYS = ("prompts", "providers", "targets", "tests")
REPORT_NAME = "import-report.md"
_UNSAFE_NAME = re.compile(r"[\s|,\[\]/\\\x00-\x1f]+")


@dataclass
class ImportedEval:
    """What an import writes: eval.yaml, cases.yaml and the report."""

    eval_yaml: dict[str, Any]
    cases: list[dict[str, Any]]
    report: ImportReport
    #: With ``--results``: the baseline eval replaying promptfoo's outputs, and its cases.
    baseline_yaml: dict[str, Any] | None = None
    baseline_cases: list[dict[str, Any]] | None = None
    #: Files copied beside eval.yaml (a Python provider's module): name -> source path.
    copies: dict[str, Path] = field(default_factory=dict)

    def summary(self) -> list[str]:
        per_case = sum(len(c.get("evaluators", [])) for c in self.cases)
        lines = [f"- {len(self.eval_yaml['systems'])} variant(s) (prompts x providers), {len(self.cases)} case(s)",
                 f"- {len(self.eval_yaml['evaluators'])} eval-level evaluator(s), {per_case} per-case evaluator(s)"]
        if self.baseline_cases is not None:
            replayed = sum(len(c["embedded_traces"]) for c in self.baseline_cases)
            lines.append(f"- {replayed} of promptfoo's outputs in {BASELINE_EVAL} (replayable baseline)")
        return lines


def _judge(source: Source) -> Judge:
    """The grading model of ``defaultTest.options.provider`` when it is an OpenAI chat model."""
    default = source.doc.data.get("defaultTest")
    options = (default.get("options") or {}) if isinstance(default, dict) else {}
    for key in sorted(set(options) - {"provider"}):
        source.note(source.at(("defaultTest", "options", key)), f"defaultTest option {key!r} not mapped",
                    "left out (model-graded assertions use evalh's own grading prompt)"
                    if key == "rubricPrompt" else "left out")
    provider = options.get("provider")
    if provider is None:
        return Judge()
    ident = provider if isinstance(provider, str) else (provider.get("id") if isinstance(provider, dict) else None)
    if isinstance(ident, str) and ident.startswith("openai:"):
        return Judge(model=ident.split(":")[-1])
    source.note(source.at(("defaultTest", "options", "provider")), f"grading provider {ident!r} not mapped",
                f"model-graded assertions use {Judge().model}")
    return Judge()


def import_promptfoo(config: Path, name: str, results: Path | None = None) -> ImportedEval:
    """Map the promptfoo config at ``config`` into an eval named ``name``.

    Raises :class:`PromptfooImportError` (one line) for input that is not a promptfoo config,
    a ``file://`` reference that does not exist, or an assertion type promptfoo does not know.
    """
    try:
        doc = load_yaml(config)
    except ConfigError as exc:
        raise PromptfooImportError(str(exc).splitlines()[0]) from None
    if not isinstance(doc.data, dict) or not any(key in doc.data for key in _CONFIG_KEYS):
        raise PromptfooImportError(f"{config.name}: not a promptfoo config (it has none of the keys "
                                   f"{', '.join(_CONFIG_KEYS)})")
    report = ImportReport(str(config))
    source = Source(doc, report)
    for key in sorted(set(doc.data) - {*_CONFIG_KEYS, "description", "defaultTest", "$schema"}):
        source.note(source.at((key,)), f"config key {key!r} not mapped", "left out",
                    "note" if key in ("sharing", "outputPath", "evaluateOptions", "env", "writeLatestResults") else "error")
    judge = _judge(source)
    prompts = read_prompts(source)
    providers = read_providers(source)
    tests = read_tests(source, judge)
    systems: list[dict[str, Any]] = []
    variants: dict[tuple[int, str], str] = {}
    for provider in providers:
        for prompt in [p for p in prompts if provider.runs(p)]:
            name_of = provider.label if len(prompts) == 1 else f"{provider.label}@{prompt.label}"
            systems.append(provider.system(_unique(_safe_name(name_of), {s["name"] for s in systems}), prompt))
            variants[(prompt.index, provider.ident)] = variants[(prompt.index, provider.label)] = systems[-1]["name"]
    if not systems:
        raise PromptfooImportError(f"{config.name}: no variant could be imported (no prompt x provider maps); "
                                   + "; ".join(f.text() for f in report.errors[:3]))
    description = doc.data.get("description")
    eval_yaml: dict[str, Any] = {
        "schema_version": "1.0",
        "eval": {"name": eval_name(name), "description": str(description or f"Imported from {config.name}"),
                 "tags": ["promptfoo"]},
        "dataset": {"type": "yaml", "path": "cases.yaml"},
        "systems": systems,
        "evaluators": tests.evaluators,
        "run": {"max_concurrency": 4, "baseline_variant": systems[0]["name"]},
    }
    imported = ImportedEval(eval_yaml, tests.cases, report, copies=dict(source.copies))
    if results is not None:
        imported.baseline_cases = attach_results(results, tests.cases, variants, report)
        imported.baseline_yaml = {
            **eval_yaml,
            "eval": {**eval_yaml["eval"], "description": f"{eval_yaml['eval']['description']} "
                                                         f"(promptfoo's results from {results.name}, replayed)"},
            "dataset": {"type": "yaml", "path": BASELINE_CASES},
            "systems": [{"name": s["name"], "adapter": "replay", "metadata": {**s["metadata"], "source": "promptfoo"}}
                        for s in systems],
        }
    return imported


def eval_name(text: str) -> str:
    """The eval's name from the output folder's: letters, digits and ``_`` only (Dagster names
    the eval's assets and jobs after it and allows no ``-`` or ``.``)."""
    name = re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_")
    return name if name and name[0].isalpha() else f"eval_{name}"


def _safe_name(text: str) -> str:
    return _UNSAFE_NAME.sub("-", text).strip("-")[:120] or "imported"


def _unique(name: str, taken: set[str]) -> str:
    candidate, number = name, 2
    while candidate in taken:
        candidate, number = f"{name}-{number}", number + 1
    return candidate


def write_import(imported: ImportedEval, out_dir: Path) -> None:
    """Write eval.yaml, cases.yaml and import-report.md into ``out_dir`` (new or empty): into a
    temporary folder beside it first, then renamed, so a failure leaves nothing half-written."""
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise PromptfooImportError(f"{out_dir}: exists and is not an empty folder (choose a new one)")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        header = "# Imported by `evalh import promptfoo`; see import-report.md for what did not map.\n"
        (staging / "eval.yaml").write_text(header + _dump(imported.eval_yaml), encoding="utf-8")
        cases = {"schema_version": "1.0", "dataset": {"name": imported.eval_yaml["eval"]["name"]},
                 "cases": imported.cases}
        (staging / "cases.yaml").write_text(_dump(cases), encoding="utf-8")
        if imported.baseline_yaml is not None:
            note = "# promptfoo's own outputs, replayed: run it, promote the run, then run eval.yaml and drift/compare.\n"
            (staging / BASELINE_EVAL).write_text(note + _dump(imported.baseline_yaml), encoding="utf-8")
            (staging / BASELINE_CASES).write_text(_dump({**cases, "cases": imported.baseline_cases}), encoding="utf-8")
        for name, path in imported.copies.items():
            shutil.copyfile(path, staging / name)
        (staging / REPORT_NAME).write_text(imported.report.markdown(imported.summary()), encoding="utf-8")
        if out_dir.exists():
            out_dir.rmdir()
        os.replace(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


class _Dumper(yaml.SafeDumper):
    """Writes repeated values out in full (no ``&id001`` anchors): the files are for people."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)
