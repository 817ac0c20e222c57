"""Load eval.yaml into an EvalSpec, collecting every problem with its file, line and key.

Plugin entries (systems, evaluators, the workspace, enrichers, output stores) are checked
against registries handed in by the layer above that knows them (:class:`PluginRegistries`,
filled by runner/loading.py): config imports no plugin family.
"""

from __future__ import annotations

import os
import re
import typing
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from evalh_pipeline.common.file_kinds import not_a_file_problem
from evalh_pipeline.config.env import MissingEnvVar, Substitution, expand_env, secret_values
from evalh_pipeline.config.errors import ConfigError, ConfigIssue
from evalh_pipeline.config.paths import resolve_input_path
from evalh_pipeline.config.schema import (RETRY_ON, EvalConfig,
                                          EvaluatorConfig, OutputConfig, capture_items_dropping, eval_key)
from evalh_pipeline.config.spec import EvalSpec
from evalh_pipeline.config.yaml_source import KeyPath, YamlDocument, duplicate_keys, format_key_path, load_yaml
from evalh_pipeline.models import RunVariant
from evalh_pipeline.models.versioning import SchemaVersionError, check_major
from evalh_pipeline.common.masking import MASK
from evalh_pipeline.common.settings import Settings
from evalh_pipeline.registry import Registry, UnknownTypeError

DATASET_TYPES = ("fixture", "jsonl", "yaml")
# Keys of systems[] that are not the adapter's (the pool is the variant's limit: EvalSpec.variant_pools;
# enrich_trace_from has its own check).
_VARIANT_KEYS = {"name", "adapter", "metadata", "pool", "enrich_trace_from"}


@dataclass(frozen=True)
class PluginRegistries:
    """The registries each plugin entry of an eval is checked against (its type's config model)."""

    systems: Registry[Any]
    evaluators: Registry[Any]
    workspaces: Registry[Any]
    enrichers: Registry[Any]
    stores: Registry[Any]


def read_eval(
    path: str | os.PathLike[str], plugins: PluginRegistries, settings: Settings,
    env: Mapping[str, str] | None = None, *, strict: bool = False,
) -> EvalSpec:
    """Parse and validate one eval.yaml. Raises :class:`ConfigError` listing every problem.

    ``${VARS}`` expand from ``env`` (default ``settings.env``). ``runs_root`` of the result is
    the canonical output as written (a URL stays a URL): the layer above names its working copy.

    Keys eval-harness tolerates but evalh does not use (an unknown key of a system, an
    evaluator's config, the dataset, the workspace or an output; eval-harness's ``run.executor`` keys; a
    ``retry.on`` value that names no error type) are dropped with a warning naming the file,
    line and the closest known key (``EvalSpec.warnings``); with ``strict`` they are errors.
    So are settings that load but likely miss their aim: an evaluator reading a part of the
    trace that ``trace.capture`` drops, ``contains_text`` checking the case's answer lists in
    another field. A key given twice in one mapping of eval.yaml or a YAML dataset keeps
    its later value, as eval-harness (PyYAML) reads it, with a warning naming both lines.
    """
    eval_path = Path(path).resolve()
    env = settings.env if env is None else env
    where, raw, substitutions = _expand(eval_path, env)
    secrets = secret_values(substitutions, env)
    try:
        return _validated(eval_path, where, raw, secrets, strict, plugins, settings)
    except ConfigError as exc:
        # An error never echoes an expanded value: it names the variable instead.
        raise ConfigError([_unexpanded(issue, substitutions, secrets) for issue in exc.issues]) from None


def _validated(eval_path: Path, where: _Locator, raw: Any, secrets: frozenset[str], strict: bool,
               plugins: PluginRegistries, settings: Settings) -> EvalSpec:
    """The EvalSpec of the expanded config ``raw``, after every check."""
    config = _validate(where, raw)
    eval_dir = eval_path.parent
    variants = [_variant(system) for system in config.systems]
    plugin_issues, warnings = _check_plugins(where, config, variants, eval_dir, plugins)
    output_issues, output_warnings = _check_outputs(where, config, plugins.stores)
    issues = [*_check_names(where, config, eval_path), *_check_pools(where, config), *plugin_issues, *output_issues]
    warnings += output_warnings + _eval_harness_warnings(where, config)
    dataset_path, dataset_issues = _check_dataset(where, config, eval_dir)
    warnings += _duplicate_keys(eval_path, dataset_path if config.dataset.type in ("yaml", "fixture")
                                and not dataset_issues else None)
    price_table_path, price_issues = _check_metrics(where, config, eval_dir)
    issues += dataset_issues + price_issues
    if strict:
        issues += [ConfigIssue(w.file, w.line, w.key, w.message.replace(", ignored as eval-harness does", "")
                               + " (an error with --strict)") for w in warnings]
    if issues:
        raise ConfigError(sorted(issues, key=lambda issue: issue.line or 0))
    if eval_key(config.eval.name) != config.eval.name:  # a note, not an error even with --strict
        warnings.append(where.issue(("eval", "name"), f"{config.eval.name!r} is not a run-id key; its runs and Dagster "
                                                 f"assets use {eval_key(config.eval.name)!r}"))

    # Secrets by use: an output's config names its credentials (a webhook's URL is one),
    # whatever the variable is called.
    for output in config.output:
        secrets |= plugins.stores.get(output.type).Config.model_validate(output.model_dump(exclude_none=True)).secrets()
    folders = [output for output in config.output if _is_run_folder(plugins.stores, output)] or [OutputConfig()]
    outputs = tuple(resolve_output_path(output.path or "runs", eval_dir, settings.runs_dir) for output in folders)
    stores = tuple(output.model_dump(exclude_none=True) for output in config.output
                   if not _is_run_folder(plugins.stores, output))
    assert dataset_path is not None  # a missing one is an issue above
    return EvalSpec(
        path=eval_path,
        config=config,
        variants=variants,
        dataset_path=dataset_path,
        runs_root=outputs[0],
        outputs=outputs,
        stores=stores,
        enrichers={s.name: tuple(s.enrich_trace_from) for s in config.systems if s.enrich_trace_from},
        variant_pools={s.name: str((s.model_extra or {})["pool"]) for s in config.systems
                       if (s.model_extra or {}).get("pool") is not None},
        raw=config.model_dump(mode="json"),
        secret_values=secrets,
        price_table_path=price_table_path,
        evaluator_types=plugins.evaluators,
        warnings=tuple(sorted(warnings, key=lambda issue: issue.line or 0)),
        settings=settings,
    )


def _expand(eval_path: Path, env: Mapping[str, str]) -> tuple[_Locator, Any, list[Substitution]]:
    """The YAML with ``${VARS}`` expanded, and every substitution made."""
    doc = load_yaml(eval_path)
    where = _Locator(doc)
    if not isinstance(doc.data, dict):
        raise ConfigError([where.issue((), "an eval file must be a mapping with eval, dataset, systems, ...")])
    try:
        raw, substitutions = expand_env(doc.data, env)
    except MissingEnvVar as exc:
        raise ConfigError([where.issue(exc.key_path, f"environment variable {exc.name!r} is not set "
                                                     f"(set it, or write ${{{exc.name}:-default}})")]) from None
    return where, raw, substitutions


def _validate(where: _Locator, raw: Any) -> EvalConfig:
    """``raw`` as an :class:`EvalConfig`; schema problems with their lines."""
    try:
        return EvalConfig.model_validate(raw)
    except ValidationError as exc:
        issues = [where.issue(tuple(err["loc"]), _pydantic_message(err, EvalConfig)) for err in exc.errors()]
        raise ConfigError(sorted(issues, key=lambda issue: issue.line or 0)) from None


def _check_names(where: _Locator, config: EvalConfig, eval_path: Path) -> list[ConfigIssue]:
    """The schema version, unique names, and every name that refers to another section."""
    issues: list[ConfigIssue] = []
    try:
        check_major(config.schema_version, what=f"{eval_path.name}")
    except SchemaVersionError as exc:
        issues.append(where.issue(("schema_version",), str(exc)))
    issues += _check_unique(where, "systems", [s.name for s in config.systems])
    issues += _check_unique(where, "evaluators", [e.name for e in config.evaluators])
    evaluator_names = {e.name for e in config.evaluators}
    for section in ("all_required", "any_required"):
        for i, name in enumerate(getattr(config.pass_criteria, section)):
            if name not in evaluator_names:
                issues.append(where.issue(("pass_criteria", section, i),
                                          f"no evaluator named {name!r} (defined: {', '.join(sorted(evaluator_names)) or 'none'})"))
    baseline = config.run.baseline_variant
    if baseline is not None and baseline not in {s.name for s in config.systems}:
        issues.append(where.issue(("run", "baseline_variant"),
                                  f"no system named {baseline!r} (defined: {', '.join(s.name for s in config.systems)})"))
    if config.dataset.type not in DATASET_TYPES:
        issues.append(where.issue(("dataset", "type"),
                                  f"unknown dataset type {config.dataset.type!r} (known: {', '.join(DATASET_TYPES)})"))
    return issues


def _variant(system: Any) -> RunVariant:
    """The run variant of one ``systems:`` entry: everything but its name and metadata is adapter config."""
    variant_config = {k: v for k, v in system.model_dump().items() if k not in _VARIANT_KEYS}
    return RunVariant(name=system.name, adapter=system.adapter, config=variant_config,
                      metadata=system.metadata, timeout_seconds=system.timeout_seconds)


def _check_plugins(
    where: _Locator, config: EvalConfig, variants: list[RunVariant], eval_dir: Path, plugins: PluginRegistries,
) -> tuple[list[ConfigIssue], list[ConfigIssue]]:
    """(errors, warnings) of each system (and its enrichers), evaluator and workspace config, by
    its type's own config model. Keys dropped with a warning are removed from the config used."""
    issues: list[ConfigIssue] = []
    warnings: list[ConfigIssue] = []
    for i, (system, variant) in enumerate(zip(config.systems, variants)):
        found, ignored, cleaned = _check_plugin_config(where, plugins.systems, variant.adapter, variant.config,
                                                       ("systems", i), "adapter")
        issues += found
        warnings += ignored
        variant.config = cleaned
        issues += _check_enrichers(where, i, system.enrich_trace_from, plugins.enrichers)
    capture = config.trace.capture if config.trace is not None else []
    for i, evaluator in enumerate(config.evaluators):
        found, ignored, cleaned = _check_plugin_config(where, plugins.evaluators, evaluator.type, evaluator.config,
                                                       ("evaluators", i), "type", config_key="config")
        issues += found
        warnings += ignored
        if cleaned != evaluator.config:
            config.evaluators[i] = evaluator.model_copy(update={"config": cleaned})
        if not found and capture:
            validated = plugins.evaluators.get(evaluator.type).Config.model_validate(cleaned)
            warnings += _captured_for(where, evaluator, validated, capture)
    if config.workspace is not None:
        found, ignored, cleaned = _check_workspace(where, config.workspace.model_dump(), eval_dir, plugins.workspaces)
        issues += found
        warnings += ignored
        if not found:
            config.workspace = type(config.workspace).model_validate(cleaned)
            issues += _check_outside_sandbox(where, config.workspace.type, variants, plugins)
    return issues, warnings


def _check_outside_sandbox(
    where: _Locator, workspace_type: str, variants: list[RunVariant], plugins: PluginRegistries,
) -> list[ConfigIssue]:
    """A sandboxed workspace (docker_volume) with a system that would use its empty host folder."""
    if not plugins.workspaces.get(workspace_type).sandboxed:
        return []
    issues = []
    for i, variant in enumerate(variants):
        try:
            outside = plugins.systems.get(variant.adapter).works_outside_sandbox(variant.config)
        except LookupError:
            continue  # an unknown adapter is reported by its own check
        if outside:
            issues.append(where.issue(("systems", i, "adapter"), (
                f"adapter {variant.adapter!r} works from outside the {workspace_type} workspace's container: it "
                "would get an empty host folder and what it wrote there would vanish; with workspace type "
                f"{workspace_type} use a cli or python_function system, or use workspace type tempdir_snapshot "
                "or git")))
    return issues


def _captured_for(where: _Locator, evaluator: EvaluatorConfig, validated: BaseModel,
                  capture: Sequence[str]) -> list[ConfigIssue]:
    """A warning for each ``trace.capture`` item an evaluator reads that the list leaves out:
    its traces reach it without that part (eval-harness ignores ``trace.capture``)."""
    read = getattr(validated, "trace_fields_read", None)
    found: dict[str, str] = {}  # missing item -> the first field read that needs it
    for field in read() if callable(read) else ():
        for item in capture_items_dropping(field, capture):
            found.setdefault(item, field)
    return [where.issue(("trace", "capture"), (
        f"{item!r} is not listed, so {field} is dropped before evaluator {evaluator.name!r} ({evaluator.type}) "
        f"reads it (add {item} to trace.capture, or remove the key to keep everything)"))
        for item, field in found.items()]


def _duplicate_keys(eval_path: Path, yaml_dataset: Path | None) -> list[ConfigIssue]:
    """A warning for each key given twice in one mapping of eval.yaml or a YAML dataset: the later
    value is used, as eval-harness (PyYAML) reads it; with ``--strict`` an error."""
    found = [d.issue(eval_path.name) for d in duplicate_keys(eval_path)]
    if yaml_dataset is not None:
        # Datasets are read with YAML 1.1 booleans, as eval-harness reads them.
        found += [d.issue(yaml_dataset.name) for d in duplicate_keys(yaml_dataset, yaml11_booleans=True)]
    return found


def _check_dataset(where: _Locator, config: EvalConfig, eval_dir: Path) -> tuple[Path | None, list[ConfigIssue]]:
    """The dataset file (resolved like any input path), if it exists."""
    if config.dataset.path is None:
        return None, [where.issue(("dataset",), "dataset.path is required")]
    dataset_path = resolve_input_path(config.dataset.path, eval_dir)
    problem = not_a_file_problem(dataset_path)
    if problem is not None:
        # "is a directory, not a file" (a FIFO, a device): said as it is, never opened.
        message = f"dataset file not found: {dataset_path}" if problem.startswith("file not found") else problem
        return dataset_path, [where.issue(("dataset", "path"), message)]
    return dataset_path, []


def _check_metrics(where: _Locator, config: EvalConfig, eval_dir: Path) -> tuple[Path | None, list[ConfigIssue]]:
    """``metrics.price_table_path``, resolved and validated."""
    if config.metrics.price_table_path is None:
        return None, []
    price_table_path, problem = _check_price_table(config.metrics.price_table_path, eval_dir)
    return price_table_path, [where.issue(("metrics", "price_table_path"), problem)] if problem else []


def _unexpanded(issue: ConfigIssue, substitutions: list[Substitution], secrets: frozenset[str]) -> ConfigIssue:
    """``issue`` with each expanded value written back as its ``${VAR}``.

    Secrets are replaced wherever they appear, other values of 4+ characters where they
    stand as a word, shorter ones only where the message quotes them whole (``got 'x'``),
    so that "at least 1" stays readable. Case is ignored: validators may have changed it.
    """
    message = issue.message
    for sub in sorted(substitutions, key=lambda s: len(s.value), reverse=True):
        value, name = re.escape(sub.value), f"${{{sub.name}}}"
        if not sub.value:
            continue
        if sub.value in secrets:
            pattern = value
        elif len(sub.value) >= 4:
            pattern = rf"(?<!\w){value}(?!\w)"
        else:
            pattern = rf"(?<=['\"]){value}(?=['\"])"
        message = re.sub(pattern, lambda _: name, message, flags=re.IGNORECASE)  # noqa: B023 - called at once
    for secret in sorted(secrets, key=len, reverse=True):
        # A secret from the host, or the part of a value that is one.
        message = re.sub(re.escape(secret), lambda _: MASK, message, flags=re.IGNORECASE)
    return replace(issue, message=message) if message != issue.message else issue


def _check_workspace(
    where: _Locator, workspace: dict[str, Any], eval_dir: Path, workspaces: Registry[Any],
) -> tuple[list[ConfigIssue], list[ConfigIssue], dict[str, Any]]:
    """Validate ``workspace:`` with its type's config model, then the folders it names."""
    issues, warnings, cleaned = _check_plugin_config(where, workspaces, workspace["type"], workspace,
                                                     ("workspace",), "type")
    if issues:
        return issues, warnings, cleaned
    cls = workspaces.get(workspace["type"])
    model = cls.Config.model_validate(cleaned)
    issues = [where.issue(("workspace", key), message) for key, message in model.config_problems(eval_dir)]
    # Artifacts are read again after the run (re-evaluate, inspect, view): the storage must
    # be reachable and outlive the process, as the canonical output must.
    storage = getattr(model, "object_storage", None)
    if storage and (problem := _url_problem(storage, must_persist="artifacts")) is not None:
        issues.append(where.issue(("workspace", "object_storage"), problem))
    return issues, warnings, cleaned


def _check_enrichers(
    where: _Locator, index: int, entries: list[dict[str, Any]], enrichers: Registry[Any],
) -> list[ConfigIssue]:
    """``systems[i].enrich_trace_from[j]`` against its enricher type's config model."""
    issues: list[ConfigIssue] = []
    for j, entry in enumerate(entries):
        at = ("systems", index, "enrich_trace_from", j)
        if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
            issues.append(where.issue(at, f"an enricher is a mapping with a type (known: {', '.join(enrichers.names())})"))
            continue
        found, unknown, _ = _check_plugin_config(where, enrichers, entry["type"], entry, at, "type")
        # Enrichers stay strict: their config is rebuilt from the YAML at run time.
        issues += found + [ConfigIssue(w.file, w.line, w.key, w.message.replace(", ignored as eval-harness does", ""))
                           for w in unknown]
    return issues


def _check_outputs(
    where: _Locator, config: EvalConfig, stores: Registry[Any],
) -> tuple[list[ConfigIssue], list[ConfigIssue]]:
    """(errors, warnings) of each ``output[]`` entry against its type's config model; folder
    URLs must be writable. Unknown keys of a store are dropped with a warning, as eval-harness
    ignores them."""
    issues: list[ConfigIssue] = []
    warnings: list[ConfigIssue] = []
    folders = 0
    for i, output in enumerate(config.output):
        entry = output.model_dump(exclude_none=True)
        found, ignored, cleaned = _check_plugin_config(where, stores, output.type, entry, ("output", i), "type")
        issues += found
        warnings += ignored
        if not found and cleaned != entry:
            config.output[i] = type(output).model_validate(cleaned)
        run_folder = not found and _is_run_folder(stores, output)
        if run_folder:
            folders += 1  # the first folder output is the canonical one
        if run_folder and output.path is not None:
            if (problem := _url_problem(output.path, must_persist="runs" if folders == 1 else None)) is not None:
                issues.append(where.issue(("output", i, "path"), problem))
    return issues, warnings


def _is_run_folder(stores: Registry[Any], output: OutputConfig) -> bool:
    """Whether an ``output[]`` entry is a run folder (the canonical one or a mirror) rather
    than a store: its type's class says so (``mirrors = False``: the engine works in it)."""
    return not stores.get(output.type).mirrors


def _eval_harness_warnings(where: _Locator, config: EvalConfig) -> list[ConfigIssue]:
    """Keys eval-harness reads that evalh does not: unknown dataset keys, retry.on values that
    name no error type, run.executor (each said once, with what evalh does instead)."""
    found = _unused_section_keys(where, ("dataset",), config.dataset.model_dump(),
                                 DATASET_KEYS.get(config.dataset.type, ()))
    for i, value in enumerate(config.run.retry.on):
        if value not in RETRY_ON:
            found.append(where.issue(("run", "retry", "on", i), f"{value!r} names no error type, so it never "
                                     f"triggers a retry ({_closest(value, RETRY_ON)})"))
    return found + _executor_warnings(where, config)


def _executor_warnings(where: _Locator, config: EvalConfig) -> list[ConfigIssue]:
    """eval-harness's own ``run.executor`` keys (a Ray address, say): accepted and unused, said
    once. ``type`` picks the Dagster executor and ``pools`` are used (see :func:`_check_pools`)."""
    executor = config.run.executor
    extra = sorted(executor.model_extra or {})
    if extra:
        return [where.issue(("run", "executor", extra[0]), (
            f"{', '.join(extra)} not used: executor {executor.type!r} runs the eval's steps as Dagster's "
            "executor of that type (its settings: broker, backend, max_concurrent, image)"))]
    return []


def _check_pools(where: _Locator, config: EvalConfig) -> list[ConfigIssue]:
    """Every ``pool`` a system or an evaluator (its judge, its embedder) names is one of ``run.executor.pools``."""
    pools = config.run.executor.pools
    known = ", ".join(sorted(pools)) or "none defined"
    named: list[tuple[tuple[str | int, ...], Any]] = [(("systems", i, "pool"), (system.model_extra or {}).get("pool")) for i, system in enumerate(config.systems)]
    named += [(("evaluators", i, "config", "pool"), e.config.get("pool")) for i, e in enumerate(config.evaluators)]
    named += [(("evaluators", i, "config", "embedder", "pool"), e.config["embedder"].get("pool"))
              for i, e in enumerate(config.evaluators) if isinstance(e.config.get("embedder"), dict)]
    issues = []
    for at, name in named:
        if name is None:
            continue
        if not isinstance(name, str) or name not in pools:
            issues.append(where.issue(at, f"unknown pool {name!r} (run.executor.pools: {known})"))
    return issues


# The keys each dataset type reads (others are warned about: eval-harness ignores them).
DATASET_KEYS = {
    "yaml": ("type", "path", "filter", "sample", "seed"),
    "jsonl": ("type", "path", "filter", "sample", "seed"),
    "fixture": ("type", "path", "filter", "sample", "seed", "embed_full_trace"),
}


def _closest(key: str, known: list[str] | tuple[str, ...]) -> str:
    import difflib

    match = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f"did you mean {match[0]!r}?" if match else f"known: {', '.join(known) or 'none'}"


def _unused_section_keys(
    where: _Locator, at: KeyPath, section: dict[str, Any], known: tuple[str, ...],
) -> list[ConfigIssue]:
    if not known:
        return []
    return [where.issue((*at, key), f"unknown key, ignored as eval-harness does ({_closest(key, known)})")
            for key in section if key not in known]


def _check_price_table(value: str, eval_dir: Path) -> tuple[Path, str | None]:
    """Resolve ``metrics.price_table_path`` like any input and validate the table it names."""
    from evalh_pipeline.common.pricing import PriceTableError, load_price_table

    path = resolve_input_path(value, eval_dir)
    try:
        load_price_table(path)
    except PriceTableError as exc:
        return path, str(exc)
    return path, None


def _url_problem(value: str, must_persist: str | None = None) -> str | None:
    """Why a URL of ``output[].path`` or ``workspace.object_storage`` cannot be written to
    (None for a plain folder or a usable URL): an unknown protocol, or its fsspec backend
    (s3fs, gcsfs, adlfs) not installed.

    Where ``must_persist`` names what is kept there (the canonical output's runs, a
    workspace's artifacts), ``memory://`` is refused: it is gone when the process exits.
    """
    if "://" not in value:
        return None
    import fsspec

    protocol = value.split("://", 1)[0]
    if protocol not in fsspec.available_protocols():
        return (f"{value!r}: unknown URL protocol {protocol!r} (use a folder, file://, memory://, "
                "s3://, gs://, az:// or another fsspec protocol)")
    try:
        fs_class = fsspec.get_filesystem_class(protocol)
    except ImportError as exc:
        return f"{value!r}: the {protocol}:// backend is not installed ({exc}; see the s3, gcs and azure extras)"
    from fsspec.implementations.memory import MemoryFileSystem

    if must_persist and issubclass(fs_class, MemoryFileSystem):
        where = ("the first output is where runs live: use a folder or a persistent URL (file://, s3://, gs://, az://)"
                 if must_persist == "runs" else
                 "re-evaluate, inspect and view read them later: use a persistent URL (file://, s3://, gs://, az://) "
                 "or leave the key out to keep them in the run folder")
        return f"{value!r}: {protocol}:// keeps {must_persist} in this process's memory, gone when it exits; {where}"
    return None


def resolve_output_path(value: str, eval_dir: Path, runs_dir: Path | None = None) -> str:
    """A URL (``file://`` too) stays a URL; a relative folder resolves like an input path (eval folder first).

    ``runs_dir`` ($EVALH_RUNS_DIR, from :class:`Settings`) replaces the default output ``runs``.
    """
    if "://" in value:
        return value
    if runs_dir is not None and value == "runs":
        return str(runs_dir)
    path = Path(value).expanduser()
    if path.is_absolute():
        return str(path)
    if value in ("runs", "runs/", "./runs"):
        # The default output is the working directory's runs/ folder, where `evalh` is run.
        return str(path.resolve())
    return str(resolve_input_path(value, eval_dir))


class _Locator:
    def __init__(self, doc: YamlDocument) -> None:
        self.doc = doc

    def issue(self, key_path: KeyPath, message: str) -> ConfigIssue:
        return ConfigIssue(self.doc.path.name, self.doc.line_of(key_path), format_key_path(key_path), message)


class _RowLocator(_Locator):
    """Issues of one dataset row: its file, and the line of a key path within it."""

    def __init__(self, file: str, line_of: Callable[[KeyPath], int | None]) -> None:
        self.file = file
        self.line_of = line_of

    def issue(self, key_path: KeyPath, message: str) -> ConfigIssue:
        return ConfigIssue(self.file, self.line_of(key_path), format_key_path(key_path), message)


def check_case_evaluators(
    entries: Any, file: str, line_of: Callable[[KeyPath], int | None], at: KeyPath, *,
    eval_evaluators: Collection[str], registry: Registry[Any] | None,
) -> list[dict[str, Any]]:
    """A dataset row's ``evaluators`` (at key path ``at``), validated as eval.yaml's entries are:
    the same entry model and, with ``registry``, each type's own config model. Their names must
    differ from the eval's evaluators (``eval_evaluators``) and from each other. Unlike eval.yaml
    (eval-harness tolerates unknown keys there), an unknown config key is an error: the feature
    is evalh's own. Raises a one-line :class:`ConfigError` (file, line, key) at the first problem.
    """
    where = _RowLocator(file, line_of)

    def fail(key_path: KeyPath, message: str) -> ConfigError:
        return ConfigError([where.issue(key_path, message)])

    if not isinstance(entries, list):
        raise fail(at, "a case's evaluators must be a list of evaluators, each with a name, a type and "
                       "its config, as in eval.yaml's evaluators")
    cleaned: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        try:
            evaluator = EvaluatorConfig.model_validate(entry)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise fail((*at, i, *err["loc"]), _pydantic_message(err, EvaluatorConfig)) from None
        if evaluator.name in eval_evaluators:
            raise fail((*at, i, "name"), f"{evaluator.name!r} is already an evaluator of the eval: a case's own "
                                         "evaluators need names of their own")
        if evaluator.name in seen:
            raise fail((*at, i, "name"), f"duplicate name {evaluator.name!r}: names must be unique within the case")
        seen.add(evaluator.name)
        config = evaluator.config
        if registry is not None:
            found, unknown, config = _check_plugin_config(where, registry, evaluator.type, evaluator.config,
                                                          (*at, i), "type", config_key="config")
            found += [ConfigIssue(w.file, w.line, w.key, w.message.replace(", ignored as eval-harness does", ""))
                      for w in unknown]
            if found:
                raise ConfigError(found[:1])
        cleaned.append({"name": evaluator.name, "type": evaluator.type, "config": config})
    return cleaned


def _check_unique(where: _Locator, section: str, names: list[str]) -> list[ConfigIssue]:
    seen: set[str] = set()
    issues = []
    for i, name in enumerate(names):
        if name in seen:
            issues.append(where.issue((section, i, "name"), f"duplicate name {name!r}: names must be unique"))
        seen.add(name)
    return issues


def _check_plugin_config(
    where: _Locator, registry: Registry[Any], type_name: str, config: dict[str, Any], at: KeyPath,
    type_key: str, config_key: str | None = None,
) -> tuple[list[ConfigIssue], list[ConfigIssue], dict[str, Any]]:
    """(errors, warnings, the config without the keys warned about) for one plugin's config.

    An unknown top-level key is what eval-harness tolerates (its adapters and evaluators
    ignore keys they do not read): it is dropped with a warning naming the closest known
    key. So is a key the config model reports through ``unused_keys()``.
    """
    try:
        cls = registry.get(type_name)
    except UnknownTypeError as exc:
        return [where.issue((*at, type_key), str(exc))], [], config
    except Exception as exc:  # noqa: BLE001 - a broken plugin must not hide the other issues
        return [where.issue((*at, type_key), f"cannot load {registry.family} {type_name!r}: {exc}")], [], config
    model: type[BaseModel] = cls.Config
    base = (*at, config_key) if config_key else at
    owner = f"{registry.family} {type_name!r}"
    dropped: list[tuple[str, str]] = []  # (key, closest-key hint)
    cleaned = dict(config)
    known = [k for k in model.model_fields if k != "description"]
    for _ in range(len(config) + 1):
        try:
            validated = model.model_validate(cleaned)
        except ValidationError as exc:
            errors = exc.errors()
            unknown = [err["loc"][0] for err in errors
                       if err.get("type") == "extra_forbidden" and len(err["loc"]) == 1 and err["loc"][0] in cleaned]
            if not unknown:
                # Still invalid: the dropped keys are likely typos of what is missing, so they are errors too.
                issues = [where.issue((*base, key), f"unknown key for {owner} ({hint})") for key, hint in dropped]
                issues += [where.issue((*base, *err["loc"]), _pydantic_message(err, model, owner)) for err in errors]
                return issues, [], config
            for key in unknown:
                dropped.append((key, _closest(str(key), known)))
                cleaned.pop(key)
            continue
        warnings = [where.issue((*base, key), f"unknown key for {owner}, ignored as eval-harness does ({hint})")
                    for key, hint in dropped]
        for hook in ("unused_keys", "config_warnings"):
            notes = getattr(validated, hook, None)
            for key, why in (notes() if callable(notes) else {}).items():
                # A key, or a path into the config (a list item: ``("nl_assertions", 2)``).
                warnings.append(where.issue((*base, *(key if isinstance(key, tuple) else (key,))), f"{why}"))
        return [], warnings, cleaned
    return [where.issue(base, "could not validate")], warnings, cleaned


def _pydantic_message(err: ErrorDetails, root: type[BaseModel], owner: str | None = None) -> str:
    kind = err.get("type")
    if kind == "extra_forbidden":
        allowed = ", ".join(_allowed_keys(root, tuple(err["loc"])[:-1])) or "none"
        return f"unknown key{f' for {owner}' if owner else ''} (allowed: {allowed})"
    if kind == "missing":
        return "required key is missing"
    if kind == "literal_error":
        msg = err["msg"]
        return f"{msg[:1].lower()}{msg[1:]}; got {err.get('input')!r}"
    return err["msg"].removeprefix("Value error, ")


def _allowed_keys(model: type[BaseModel], loc: KeyPath) -> list[str]:
    """The field names of the model found at ``loc`` inside ``model`` (for "allowed:" hints)."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)) or part not in current.model_fields:
            return []
        current = _model_in(current.model_fields[part].annotation)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


def _model_in(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None
