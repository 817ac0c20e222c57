"""``evalh import promptfoo``: read a promptfoo config and map it to an eval's files."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from evalh_pipeline.config.errors import ConfigError
from evalh_pipeline.config.schema import eval_key
from evalh_pipeline.config.yaml_source import load_yaml
from evalh_pipeline.importers.promptfoo.assertions import Judge, Outputs
from evalh_pipeline.importers.promptfoo.prompts import Prompt, read_prompts
from evalh_pipeline.importers.promptfoo.providers import Provider, read_providers
from evalh_pipeline.importers.promptfoo.results import BASELINE_CASES, BASELINE_EVAL, attach_results
from evalh_pipeline.importers.promptfoo.source import Source
from evalh_pipeline.importers.promptfoo.tests import Tests, read_tests
from evalh_pipeline.importers.report import REPORT_NAME, BadSource, ImportReport

_CONFIG_KEYS = ("prompts", "providers", "targets", "tests")
# Top-level keys that only say where promptfoo writes or shares its results, or how it reports
# them: no verdict depends on them.
_REPORTING_KEYS = ("sharing", "outputPath", "evaluateOptions", "env", "writeLatestResults", "derivedMetrics")
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

    @property
    def name(self) -> str:
        return str(self.eval_yaml["eval"]["name"])

    def files(self) -> dict[str, str | bytes]:
        """What the import writes: relative path -> text (or the bytes of a copied file)."""
        header = "# Imported by `evalh import promptfoo`; see import-report.md for what did not map.\n"
        cases = {"schema_version": "1.0", "dataset": {"name": self.name}, "cases": self.cases}
        files: dict[str, str | bytes] = {"eval.yaml": header + _dump(self.eval_yaml), "cases.yaml": _dump(cases)}
        if self.baseline_yaml is not None:
            note = "# promptfoo's own outputs, replayed: run it, promote the run, then run eval.yaml and drift/compare.\n"
            files[BASELINE_EVAL] = note + _dump(self.baseline_yaml)
            files[BASELINE_CASES] = _dump({**cases, "cases": self.baseline_cases})
        for name, path in self.copies.items():
            files[name] = path.read_bytes()
        files[REPORT_NAME] = self.report.markdown(self.name, self.summary())
        return files

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
    for key in sorted(set(options) - {"provider", "rubricPrompt", "transform"}):  # transform: tests.py
        source.note(source.at(("defaultTest", "options", key)), f"defaultTest option {key!r} not mapped", "left out")
    rubric_prompt = options.get("rubricPrompt")
    provider = options.get("provider")
    if provider is None:
        return Judge(rubric_prompt=rubric_prompt)
    ident = provider if isinstance(provider, str) else (provider.get("id") if isinstance(provider, dict) else None)
    if isinstance(ident, str) and ident.startswith("openai:"):
        return Judge(model=ident.split(":")[-1], rubric_prompt=rubric_prompt)
    source.note(source.at(("defaultTest", "options", "provider")), f"grading provider {ident!r} not mapped",
                f"model-graded assertions use {Judge().model}")
    return Judge(rubric_prompt=rubric_prompt)


def _outputs(providers: list[Provider], prompts: list[Prompt]) -> Outputs:
    """What promptfoo's assertions see besides the answer: the tool calls of the OpenAI
    providers with tools, and the prompt (when the config has one)."""
    tools = [p.tools for p in providers if p.tools is not None]
    return Outputs(openai_tool_calls=bool(tools), tools=tools[0] if tools else None,
                   tools_differ=any(t != tools[0] for t in tools),
                   prompt=prompts[0].text if len(prompts) == 1 else None,
                   providers=[(p.label, p.ident) for p in providers])


def import_promptfoo(config: Path, name: str, results: Path | None = None) -> ImportedEval:
    """Map the promptfoo config at ``config`` into an eval named ``name``.

    Raises :class:`BadSource` (one line) for input that is not a promptfoo config,
    a ``file://`` reference that does not exist, or an assertion type promptfoo does not know.
    """
    try:
        doc = load_yaml(config)
    except ConfigError as exc:
        raise BadSource.of(exc.issues[0]) from None
    if not isinstance(doc.data, dict) or not any(key in doc.data for key in _CONFIG_KEYS):
        raise BadSource(config.name, None, "", f"not a promptfoo config (it has none of the keys "
                                               f"{', '.join(_CONFIG_KEYS)})")
    report = ImportReport(f"promptfoo config {config}")
    source = Source(doc, report)
    # assertionTemplates are read where an assertion's `$ref` names them (tests.dereference).
    for key in sorted(set(doc.data) - {*_CONFIG_KEYS, "description", "defaultTest", "$schema", "assertionTemplates"}):
        source.note(source.at((key,)), f"config key {key!r} not mapped", "left out"
                    + (" (the named metrics' per-test scores are not combined into derived ones)"
                       if key == "derivedMetrics" else ""), "note" if key in _REPORTING_KEYS else "error")
    judge = _judge(source)
    prompts = read_prompts(source)
    providers = read_providers(source)
    tests = read_tests(source, judge, _outputs(providers, prompts))
    judged = bool(tests.evaluators) or any(c.get("evaluators") for c in tests.cases)
    for provider in providers:
        if provider.structured is not None:
            source.note(provider.structured, "response_format json_schema: promptfoo hands assertions the parsed object",
                        "evalh's assertions see the answer's JSON text" + ("" if judged else
                                                                            " (no assertion here reads it)"),
                        "error" if judged else "note")
    systems: list[dict[str, Any]] = []
    variants: dict[tuple[int, str], str] = {}
    of_provider: list[list[str]] = []  # the variants of each provider, in order
    for provider in providers:
        of_provider.append([])
        for prompt in [p for p in prompts if provider.runs(p)]:
            name_of = provider.label if len(prompts) == 1 else f"{provider.label}@{prompt.label}"
            systems.append(provider.system(_unique(_safe_name(name_of), {s["name"] for s in systems}), prompt))
            variants[(prompt.index, provider.ident)] = variants[(prompt.index, provider.label)] = systems[-1]["name"]
            of_provider[-1].append(systems[-1]["name"])
    if not systems:
        raise BadSource(config.name, None, "", "no variant could be imported (no prompt x provider maps); "
                                               + "; ".join(f.text() for f in report.errors[:3]))
    tests.cases[:] = _with_variants(source, tests, of_provider)
    description = doc.data.get("description")
    eval_yaml: dict[str, Any] = {
        "schema_version": "1.0",
        "eval": {"name": eval_key(name), "description": str(description or f"Imported from {config.name}"),
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


def _with_variants(source: Source, tests: Tests, of_provider: list[list[str]]) -> list[dict[str, Any]]:
    """The cases, those of a test whose ``providers`` filter keeps some providers with the
    ``variants`` of those providers (every prompt of each); a case none of whose providers
    has a variant (their ``prompts`` leave none) is left out (noted), as promptfoo runs it nowhere."""
    cases = []
    for case in tests.cases:
        if case["id"] in tests.providers_of:
            kept, place = tests.providers_of[case["id"]]
            case = {**case, "variants": [name for i in kept for name in of_provider[i]]}
            if not case["variants"]:
                source.note(place, "test providers keep no imported prompt x provider",
                            "test left out: promptfoo runs it nowhere either", "note")
                continue
        cases.append(case)
    return cases


def _safe_name(text: str) -> str:
    return _UNSAFE_NAME.sub("-", text).strip("-")[:120] or "imported"


def _unique(name: str, taken: set[str]) -> str:
    candidate, number = name, 2
    while candidate in taken:
        candidate, number = f"{name}-{number}", number + 1
    return candidate


class _Dumper(yaml.SafeDumper):
    """Writes repeated values out in full (no ``&id001`` anchors): the files are for people."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)
