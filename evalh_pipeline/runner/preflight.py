"""What a dry run checks beyond loading: each system's own preflight (systems/base.py).

Loading an eval validates its keys and values; it never imports a target, resolves a
program or reads an endpoint the way a run does. These checks do, without calling any
system, so a typo in a ``python_function`` target fails ``evalh run --dry-run`` instead of
every cell of the real run.
"""

from __future__ import annotations

from evalh_pipeline.common.masking import mask_text
from evalh_pipeline.config.errors import ConfigIssue
from evalh_pipeline.config.spec import EvalSpec
from evalh_pipeline.config.yaml_source import format_key_path, load_yaml
from evalh_pipeline.systems.base import SystemContext, WorkspaceKind
from evalh_pipeline.systems.registry import SYSTEMS
from evalh_pipeline.workspaces.registry import WORKSPACES


def preflight_problems(spec: EvalSpec) -> list[ConfigIssue]:
    """One issue per problem, located ``eval.yaml:LINE systems[i].KEY`` and naming the system."""
    context = SystemContext(eval_dir=spec.eval_dir, secret_values=spec.secret_values, env=spec.settings.env)
    workspace: WorkspaceKind = None
    if spec.config.workspace is not None:
        workspace = "sandbox" if WORKSPACES.get(spec.config.workspace.type).sandboxed else "host"
    lines = load_yaml(spec.path)  # the line of each key (the spec keeps the values only)
    issues = []
    for index, variant in enumerate(spec.variants):
        try:
            problems = SYSTEMS.get(variant.adapter)(variant, context).preflight(workspace)
        except Exception as exc:  # noqa: BLE001 - a plugin's own check failing is its problem to report
            problems = [("adapter", f"its preflight check failed: {type(exc).__name__}: {exc}")]
        for key, problem in problems:
            at = ("systems", index, key)
            issues.append(ConfigIssue(spec.path.name, lines.line_of(at), format_key_path(at), mask_text(
                f"system {variant.name!r} ({variant.adapter}): {problem}", spec.secret_values)))
    return issues
