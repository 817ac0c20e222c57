"""`evalh inspect`: show cells of a run (input, answer, tool calls, files, verdicts), escaped
for the terminal (read-only)."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import click

from evalh_pipeline.cli.group import EXIT_INFRA, _RunLocation, _store_options, main
from evalh_pipeline.cli.shared import _run_directory
from evalh_pipeline.terminal import error, escape_control, out, plural, say

if TYPE_CHECKING:
    from rich.text import Text

    from evalh_pipeline.queries.inspect import InspectedCell


@main.command()
@click.argument("run_dir", type=_RunLocation())
@click.option("--case", "case_id", help="Only this case id.")
@click.option("--variant", help="Only this variant.")
@click.option("--failed", is_flag=True, help="Only cells that did not pass (pass_criteria) or errored.")
@click.option("--thinking", is_flag=True, help="Also show the system's thinking.")
@click.option("--limit", type=click.IntRange(min=0), default=20, show_default=True,
              help="Show at most N cells (0: all).")
@_store_options
def inspect(run_dir: str, case_id: str | None, variant: str | None, failed: bool, thinking: bool, limit: int,
            store: str | None, namespace: tuple[str, ...]) -> None:
    """Show cells of RUN_DIR: input, answer, tool calls, error and every evaluator's verdict (read-only)."""
    from evalh_pipeline.queries.inspect import inspect_run

    directory = _run_directory(run_dir, store, namespace)
    try:
        found = inspect_run(directory, case_id=case_id, variant=variant, failed=failed, limit=limit or None)
    except Exception as exc:  # noqa: BLE001 - unreadable run files
        error(f"{type(exc).__name__}: {exc}")
        sys.exit(EXIT_INFRA)

    for cell in found.cells:
        text = _cell_text(cell, thinking)
        if out.is_terminal:
            out.rich(text)
        else:
            out.line(text.plain)
    shown = len(found.cells)
    rest = f" (showing {shown}; use --limit)" if shown < found.matched else ""
    say(f"{plural(found.matched, 'matching cell')} in {found.run_id}{rest}")


def _json_text(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


# Lines of unified diff shown per cell; the whole diff stays in the artifact's diff.txt.
MAX_DIFF_LINES = 80


def _append_file_changes(text: Text, artifact: dict[str, Any]) -> None:
    """The cell's filesystem diff: changed paths, then the text diffs up to MAX_DIFF_LINES."""
    diff = artifact.get("diff") or {}
    changes = [("+", p) for p in diff.get("added", [])] + [("~", p) for p in diff.get("modified", [])] + [
        ("-", p) for p in diff.get("removed", [])]
    text.append("files:" + (" " if changes else " unchanged") + "\n", style="bold")
    for mark, path in changes:
        text.append(f"  {mark} {escape_control(path)}\n", style={"+": "green", "-": "red"}.get(mark, "yellow"))
    lines = [line for body in (diff.get("text_diffs") or {}).values() for line in body.splitlines()]
    for line in lines[:MAX_DIFF_LINES]:
        style = "green" if line.startswith("+") else "red" if line.startswith("-") else None
        text.append(f"  {escape_control(line)}\n", style=style)
    if len(lines) > MAX_DIFF_LINES:
        where = escape_control(artifact.get("artifacts_path") or "the artifacts folder")
        text.append(f"  … {len(lines) - MAX_DIFF_LINES} more diff line(s) in {where}/diff.txt\n")


def _cell_text(cell: InspectedCell, thinking: bool) -> Text:
    """One inspected cell as a single rich Text.

    Everything in it except the labels came from the dataset or the system under test:
    it is escaped (no control sequence reaches the terminal) and never read as markup.
    """
    from rich.text import Text

    trace = cell.trace
    error_ = trace.get("error")
    output = trace.get("output") or {}
    status = "ERROR" if error_ else ("PASS" if cell.passed else "FAIL")
    sample = f" · sample {cell.sample}" if cell.sample else ""
    text = Text()
    text.append(f"── {escape_control(cell.case_id)} · {escape_control(cell.variant_name)}{sample} · {status} ──\n",
                style="bold green" if status == "PASS" else "bold red")

    def field(label: str, value: str) -> None:
        text.append(f"{label}:" + (" " if value else ""), style="bold")
        text.append(escape_control(value) + "\n")

    field("input", _json_text(trace.get("input", {})))
    field("answer", str(output["final_answer"]) if output.get("final_answer") is not None else "–")
    if output.get("structured") is not None:
        field("structured", _json_text(output["structured"]))
    calls = trace.get("tool_calls") or []
    field("tool calls", "" if calls else "none")
    for call in calls:
        args = json.dumps(call.get("arguments", {}), ensure_ascii=False, default=str)
        text.append(escape_control(f"  {call.get('name')}({args})") + "\n")
    if error_:
        field("error", f"{error_.get('type')}: {error_.get('message')}")
    if thinking:
        field("thinking", output.get("thinking") or "–")
    if cell.artifact is not None:
        _append_file_changes(text, cell.artifact)
    if not cell.results:
        field("evaluators", "no results")
    for r in sorted(cell.results, key=lambda r: r.get("evaluator", "")):
        ok = bool(r.get("passed")) and not r.get("error")
        reason = r.get("reason") or ""
        if r.get("error"):
            reason = f"{reason} [error {r['error'].get('type')}: {r['error'].get('message')}]".strip()
        text.append("  ✓ " if ok else "  ✗ ", style="green" if ok else "red")
        text.append(escape_control(f"{r.get('evaluator')}: {reason}") + "\n")
    text.rstrip()
    return text
