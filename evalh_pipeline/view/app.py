"""The viewer's web application: its routes, each page's data, and the headers every answer carries.

Read-only but for labels: every page reads the run folders through the queries (DuckDB over
the JSONL files, or the run's cell store), never writing; the one POST route, the review
queue's answer, appends a human label to the eval's label file and nothing else (view/review.py
says who may). Handlers are plain functions, which Starlette runs in its thread pool: DuckDB's
work never blocks the event loop.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from evalh_pipeline.common.yaml_files import load_yaml_text
from evalh_pipeline.queries.calibration import EvaluatorCalibration, run_calibration
from evalh_pipeline.queries.cell_store import answer_again
from evalh_pipeline.queries.compare import compare_runs
from evalh_pipeline.queries.sql import UnreadableRecordsError
from evalh_pipeline.queries.sql import duckdb  # the engine module sql.py picked
from evalh_pipeline.queries.view_cell import read_artifact, read_case
from evalh_pipeline.queries.view_history import eval_history
from evalh_pipeline.queries.rate_limits import rate_limit_records
from evalh_pipeline.queries.view_run import CaseNeighbours, MatrixFilter, RunCells
from evalh_pipeline.queries.unanswered import unanswered_run
from evalh_pipeline.queries.view_compare import unchanged_cases
from evalh_pipeline.queries.view_search import search_runs
from evalh_pipeline.common.settings import DEFAULT_DAGSTER_URL
from evalh_pipeline.store.labels import append_labels
from evalh_pipeline.outputs.runs_mirror import RunsMirror
from evalh_pipeline.store.stage_runs import recorded_stage_runs
from evalh_pipeline.view.charts import level_chart, rate_chart
from evalh_pipeline.view.links import DagsterLink, dagster_links
from evalh_pipeline.view.catalog import RunEntry, RunsFolder, read_summary, safe_name, summary_comparisons, summary_figures, wilson_interval
from evalh_pipeline.view.rendering import STATIC, highlight_css, preload, render
from evalh_pipeline.view.review import LabelGuard, LabelRefused, LabelRejected, QueueView, eval_of, parse_form, \
    read_form_body, record_label, review_context

# The pages run one script, the viewer's own /static/keys.js (keyboard navigation), load nothing
# from elsewhere, and cannot be framed: an injected inline <script>, inline handler,
# javascript: URL or remote image is refused by the browser even if some markup were ever to
# slip through the escaping.
CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                           "form-action 'self'; "
                           "base-uri 'none'; frame-ancestors 'none'")
SECURITY_HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]
PAGE_SIZE = 50
RUNS_PER_EVAL = 20  # on the runs list, before filtering by eval
HISTORY_RUNS = 10
# A run without a complete summary whose traces or results changed this recently is taken to be
# running: its page reloads itself every LIVE_REFRESH_S. One left behind (a killed run) stops
# reloading once it has been still for LIVE_WINDOW_S.
LIVE_REFRESH_S = 5
LIVE_WINDOW_S = 600
COMPARE_LIMIT = 200  # cases listed per variant and kind on a comparison
SEARCH_RUNS = 50  # newest runs a search reads
SEARCH_HITS = 200
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


class SecurityHeaders:
    """Adds :data:`SECURITY_HEADERS` to every response; refuses a Host the viewer is not served as.

    The Host check keeps a web page elsewhere from reaching a loopback viewer through a
    rebound DNS name.
    """

    def __init__(self, app: ASGIApp, allowed_hosts: tuple[str, ...] | None) -> None:
        self.app = app
        self.allowed_hosts = allowed_hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.allowed_hosts is not None and _host(scope) not in self.allowed_hosts:
            response = PlainTextResponse("unknown host", status_code=400)
            await response(scope, receive, self._with_headers(send))
            return
        await self.app(scope, receive, self._with_headers(send))

    @staticmethod
    def _with_headers(send: Send) -> Callable[[Message], Awaitable[None]]:
        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        return sending


def _host(scope: Scope) -> str:
    for name, value in scope.get("headers", []):
        if name == b"host":
            host: str = value.decode("latin-1")
            return host.rsplit(":", 1)[0] if not host.endswith("]") else host
    return ""


class NotFound(Exception):
    """A page for something the runs folder does not have."""


# Pages computed at once: each holds an in-memory DuckDB (up to 256 MB), so the viewer's memory
# stays bounded however many requests arrive together; the others wait their turn.
CONCURRENT_PAGES = 2


@dataclass
class Viewer:
    """The pages over one runs folder."""

    folder: RunsFolder
    # The Dagster UI every run page links back to (Settings.dagster_url).
    dagster_url: str = DEFAULT_DAGSTER_URL
    # Who the review queue's labels are by, and who may write them (view/review.py).
    labeller: str = "viewer"
    guard: LabelGuard = field(default_factory=LabelGuard)
    # The runs folder's source when it is a copy of one on object storage (`evalh view s3://…`):
    # pages bring the copy up to date first, and labels go to the URL.
    mirror: RunsMirror | None = None
    slots: threading.BoundedSemaphore = field(default_factory=lambda: threading.BoundedSemaphore(CONCURRENT_PAGES))

    # -- runs -----------------------------------------------------------------------------

    def runs(self, request: Request) -> Response:
        self._refresh()
        wanted = request.query_params.get("eval", "")
        text = request.query_params.get("q", "").strip()
        page = _int(request.query_params.get("page"), 1)
        entries = self.folder.entries()
        evals = sorted({e.eval_name for e in entries})
        by_eval: dict[str, list[RunEntry]] = {}
        for entry in entries:
            if (not wanted or entry.eval_name == wanted) and _names(entry, text):
                by_eval.setdefault(entry.eval_name, []).append(entry)
        # Each eval's newest runs (all of one eval, a page at a time, when filtered): only the
        # runs shown have their summary read.
        size = PAGE_SIZE if wanted else RUNS_PER_EVAL
        start = (page - 1) * size if wanted else 0
        shown = {name: [self.folder.add_figures(e) for e in runs[start:start + size]]
                 for name, runs in sorted(by_eval.items())}
        counts = {name: len(runs) for name, runs in by_eval.items()}
        return _page("runs.html", title="Runs", root=str(self.folder.root), evals=evals, wanted=wanted, text=text,
                     by_eval=shown, counts=counts, page=page, size=size,
                     baselines={name: self.folder.baseline_of(name) for name in shown})

    def search(self, request: Request) -> Response:
        self._refresh()
        text = request.query_params.get("q", "").strip()
        wanted = request.query_params.get("eval", "")
        entries = [e for e in self.folder.entries() if not e.problem and (not wanted or e.eval_name == wanted)]
        entries.sort(key=lambda e: e.created, reverse=True)
        runs = [self._run(e.run_id) for e in entries[:SEARCH_RUNS]]
        result = search_runs(runs, text, limit=SEARCH_HITS)
        return _page("search.html", title=f"Search {text}" if text else "Search", text=text, wanted=wanted,
                     evals=sorted({e.eval_name for e in self.folder.entries()}), result=result,
                     runs_total=len(entries), limit=SEARCH_HITS)

    # -- one run --------------------------------------------------------------------------

    def run(self, request: Request) -> Response:
        run = self._run(request.path_params["run_id"])
        meta, config = _meta(run), _config(run)
        order = [str(v) for v in meta.get("variants") or []]
        q = request.query_params
        filters = MatrixFilter(
            failed=q.get("failed") == "1", errored=q.get("errored") == "1", regressed=q.get("regressed") == "1",
            improved=q.get("improved") == "1", flaky=q.get("flaky") == "1", evaluator=q.get("evaluator", ""),
            meta_key=q.get("meta_key", ""), meta_value=q.get("meta_value", ""), text=q.get("text", ""))
        page = _int(q.get("page"), 1)
        summary = _summary(run)
        # This project's summary.yaml holds the figures and the baseline comparison: shown as
        # it states them (nothing to aggregate or bootstrap again). An eval-harness run's are
        # computed with the same SQL the summary uses.
        figures = summary_figures(summary) if meta.get("written_by") != "eval-harness" else None
        # The page's queries read the run's cell store: made again once when a newer summary
        # replaced it meanwhile (this page composes them, so it owns the retry).
        variants, evaluators, baseline, comparisons, matrix = answer_again(
            lambda: self._run_tables(run, order, figures, summary, config, filters, page))
        names = [str(v["name"]) for v in variants]
        query = {k: v for k, v in q.items() if k != "page" and v}
        # Every cell errored: the run failed if none answered either (read from its traces only then).
        silent = (unanswered_run(run.traces) if variants and all(
            v["cases_total"] and v["cases_errored"] == v["cases_total"] for v in variants) else None)
        live = _live(run, summary)
        return _page("run.html", failure=silent.cause() if silent is not None else None, title=run.run_id,
                     calibrations=self._calibrations(run, baseline),
                     run_id=run.run_id, meta=meta, variants=variants, names=names,
                     intervals={v["name"]: wilson_interval(v["cases_passed"], v["cases_total"]) for v in variants},
                     evaluators=evaluators, baseline=baseline, comparisons=comparisons, matrix=matrix,
                     filters=filters, page=page, pages=max(1, -(-matrix.total // PAGE_SIZE)), query=query,
                     completeness=(summary or {}).get("completeness"),
                     is_baseline=self.folder.baseline_of(str(meta.get("eval_name"))) == run.run_id,
                     eval_display=_display_name(config, meta), live=live,
                     refresh=LIVE_REFRESH_S if live is not None else None, still_minutes=LIVE_WINDOW_S // 60,
                     dagster=self._dagster(run, meta),
                     rate_limits=[c for c in map(level_chart, rate_limit_records(run)) if c is not None])

    @staticmethod
    def _run_tables(run: Any, order: list[str], figures: Any, summary: dict[str, Any] | None,
                    config: dict[str, Any], filters: MatrixFilter, page: int
                    ) -> tuple[Any, Any, str | None, list[Any], Any]:
        """The run page's variants, evaluators, baseline, comparisons and matrix page."""
        with RunCells(run) as cells:
            if figures is None:
                variants = [v.model_dump() for v in cells.variants(order)]
                evaluators = {name: {v: asdict(f) for v, f in by.items()} for name, by in cells.evaluators().items()}
            else:
                variants, evaluators = figures
            names = [str(v["name"]) for v in variants]
            baseline = _baseline_variant(config, names)
            comparisons: list[Any] | None = summary_comparisons(summary, baseline) if figures is not None else None
            if comparisons is None:
                comparisons = [cells.compare_variants(baseline, v) for v in names if v != baseline] if baseline else []
            matrix = cells.matrix(filters, baseline=baseline, offset=(page - 1) * PAGE_SIZE, limit=PAGE_SIZE)
        return variants, evaluators, baseline, comparisons, matrix

    def variants(self, request: Request) -> Response:
        run = self._run(request.path_params["run_id"])
        a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
        order = [str(v) for v in _meta(run).get("variants") or []]

        def pair_of() -> tuple[list[str], Any]:
            with RunCells(run) as cells:
                names = [v.name for v in cells.variants(order)]
                if a not in names or b not in names:
                    raise NotFound(f"run {run.run_id} has no variants {a!r} and {b!r} (it has {', '.join(names)})")
                return names, cells.compare_variants(a, b, flips_limit=2000)

        names, pair = answer_again(pair_of)  # as the run page: this page composes the queries
        return _page("compare_variants.html", title=f"{b} against {a}", run_id=run.run_id, pair=pair, names=names,
                     calibrations=self._calibrations(run, a), shown_variants=[a, b],
                     dagster=self._dagster(run, _meta(run)))

    # -- the review queue -----------------------------------------------------------------

    def review(self, request: Request) -> Response:
        run = self._run(request.path_params["run_id"])
        q = request.query_params
        context = review_context(run, QueueView.of(dict(q)), labeller=self.labeller, guard=self.guard,
                                 last={k: q[k] for k in ("last_case", "last_variant", "last_sample", "last_evaluator",
                                                         "you", "judge") if k in q})
        return _page("review.html", title=f"Review · {run.run_id}", **context)

    async def answer(self, request: Request) -> Response:
        """A reviewer's answer (POST): refused (403) from a client elsewhere or another site
        before its body is read, and without the viewer's token after; else stored as a label
        and the review page shown again (303)."""
        try:
            self.guard.check_origin(request)
            form = parse_form(await read_form_body(request))
            self.guard.check_token(form.get("token", ""))
            run = self.folder.run(request.path_params["run_id"])
            if run is None:
                raise LabelRejected(f"no run {request.path_params['run_id']!r} in the runs folder", 404)
            target = await run_in_threadpool(record_label, run, form, labeller=self.labeller,
                                             append=self.mirror.append_labels if self.mirror else append_labels)
        except LabelRefused as exc:
            return PlainTextResponse(f"refused: {exc}", status_code=403)
        except LabelRejected as exc:
            return PlainTextResponse(f"not stored: {exc}", status_code=exc.status)
        except (UnreadableRecordsError, OSError, ValueError) as exc:
            return PlainTextResponse(f"not stored: could not read the run: {exc}", status_code=422)
        return RedirectResponse(target, status_code=303)

    def _calibrations(self, run: Any, baseline: str | None) -> dict[str, EvaluatorCalibration]:
        """The judge calibration and corrected rates of the run's labelled evaluators, from the
        labels as they are now (a label just made shows at once; summary.yaml has them as they
        were when it was written)."""
        eval_name = eval_of(run)
        return run_calibration(run, self.folder.root, eval_name, baseline) if eval_name else {}

    # -- one cell -------------------------------------------------------------------------

    def case(self, request: Request) -> Response:
        run = self._run(request.path_params["run_id"])
        case_id = request.path_params.get("case_id", request.query_params.get("id"))
        if case_id is None:
            raise NotFound("no case id given")
        records = read_case(run, case_id)
        if not records.traces:
            raise NotFound(f"run {run.run_id} has no trace of case {case_id!r}")
        meta, config = _meta(run), _config(run)
        order = [str(v) for v in meta.get("variants") or []]
        cells = sorted(records.cells(), key=lambda c: (order.index(c[0]) if c[0] in order else len(order), c))
        names = list(dict.fromkeys(v for v, _ in cells))
        baseline = _baseline_variant(config, names)
        a = request.query_params.get("a") or baseline or names[0]
        columns = [_column(records, run, variant, sample, read_artifact) for variant, sample in cells]
        answers = {v: _final_answer(records.trace(v, 0) or {}) for v in names}
        diffs = [(a, b) for b in ([request.query_params["b"]] if request.query_params.get("b") else names)
                 if b != a and b in answers and a in answers]

        def neighbours() -> CaseNeighbours:
            with RunCells(run) as run_cells:
                return run_cells.neighbours(case_id)

        # The links to the next cases read the run strictly, as the matrix does: records it
        # cannot read cost the links (the run page names the problem), not this page.
        try:
            around: CaseNeighbours | None = answer_again(neighbours)
        except (UnreadableRecordsError, duckdb.Error):
            around = None
        return _page("case.html", title=f"{case_id} · {run.run_id}", run_id=run.run_id, case_id=case_id,
                     case=records.case, first=records.traces[0], columns=columns, diffs=diffs, answers=answers,
                     around=around, dagster=self._dagster(run, meta))

    # -- two runs -------------------------------------------------------------------------

    def compare(self, request: Request) -> Response:
        run_a = self._run(request.path_params["run_a"])
        run_b = self._run(request.path_params["run_b"])
        result = compare_runs(run_a, run_b)
        intervals = {(side, v.variant): wilson_interval(getattr(v, side).cases_passed, getattr(v, side).cases_total)
                     for v in result.variants for side in ("a", "b")}
        # The cases judged alike are listed only when asked for (one more read of both runs).
        unchanged = unchanged_cases(run_a, run_b, limit=COMPARE_LIMIT) \
            if request.query_params.get("unchanged") == "1" else None
        calibrations = {}
        names = [v.variant for v in result.variants]
        for side, run in (("A", run_a), ("B", run_b)):
            baseline = _baseline_variant(_config(run), names)
            calibrations[side] = {"by_evaluator": self._calibrations(run, baseline), "variants": names,
                                  "baseline": baseline}
        return _page("compare_runs.html", title=f"{run_b.run_id} against {run_a.run_id}", result=result,
                     intervals=intervals, limit=COMPARE_LIMIT, unchanged=unchanged, calibrations=calibrations)

    def compare_case(self, request: Request) -> Response:
        run_a = self._run(request.path_params["run_a"])
        run_b = self._run(request.path_params["run_b"])
        case_id, variant = request.query_params.get("id"), request.query_params.get("variant", "")
        if case_id is None:
            raise NotFound("no case id given")
        sides = []
        for run in (run_a, run_b):
            records = read_case(run, case_id)
            samples = sorted(s for v, s in records.cells() if v == variant)
            sides.append((run, [_column(records, run, variant, s, read_artifact) for s in samples]))
        if not any(columns for _, columns in sides):
            raise NotFound(f"neither run has a trace of case {case_id!r} on variant {variant!r}")
        answers = [_final_answer(columns[0]["trace"]) if columns else None for _, columns in sides]
        return _page("compare_case.html", title=f"{case_id} · {variant}", case_id=case_id, variant=variant,
                     sides=sides, answers=answers, run_a=run_a.run_id, run_b=run_b.run_id)

    # -- an eval's history ----------------------------------------------------------------

    def history(self, request: Request) -> Response:
        eval_name = request.path_params["eval_name"]
        self._refresh()
        entries = [e for e in self.folder.entries() if e.eval_name == eval_name and not e.problem]
        if not safe_name(eval_name) or not entries:
            raise NotFound(f"no runs of eval {eval_name!r}")
        q = request.query_params
        count = min(max(_int(q.get("runs"), HISTORY_RUNS), 1), 50)
        page = _int(q.get("page"), 1)
        unstable_only = q.get("unstable") == "1"
        shown = [self.folder.add_figures(e) for e in entries[:count]]
        runs = [self._run(e.run_id) for e in shown]
        history = eval_history(runs, offset=(page - 1) * PAGE_SIZE, limit=PAGE_SIZE, unstable_only=unstable_only)
        # In the order the runs' summaries list them, then any other.
        found = {v for _, v in history.rates}
        variants = [v for v in dict.fromkeys(r.name for e in shown for r in e.variants) if v in found]
        variants += sorted(found - set(variants))
        total = history.unstable_cases if unstable_only else history.total_cases
        # The chart reads left to right, oldest run first (the table lists the newest first).
        last = len(shown) - 1
        chart = rate_chart([e.run_id for e in reversed(shown)],
                           {(last - i, v): counts for (i, v), counts in history.rates.items()}, variants)
        return _page("history.html", title=f"History of {eval_name}", eval_name=eval_name, entries=shown, chart=chart,
                     history=history, variants=variants, count=count, page=page, unstable_only=unstable_only,
                     pages=max(1, -(-total // PAGE_SIZE)), wilson=wilson_interval,
                     baseline=self.folder.baseline_of(eval_name))

    # -- helpers --------------------------------------------------------------------------

    def _dagster(self, run: Any, meta: dict[str, Any]) -> list[DagsterLink]:
        """The run's links back to the Dagster UI (its Dagster runs, partition and checks)."""
        eval_name = str(meta.get("eval_name") or "")
        if not eval_name or meta.get("written_by") == "eval-harness":
            return []  # an eval-harness run was never a partition
        return dagster_links(self.dagster_url, eval_name, run.run_id, recorded_stage_runs(run))

    def _refresh(self, run_id: str | None = None) -> None:
        """Bring the copy of a runs folder on object storage up to date (every run, or
        ``run_id``'s files alone): what another machine published since shows. Unreachable
        storage is this page's error (422), with what is copied left as it is."""
        if self.mirror is None:
            return
        try:
            self.mirror.sync(run_id)
        except Exception as exc:  # noqa: BLE001 - unreachable, unauthorized or unreadable storage
            raise OSError(f"{self.mirror.url}: {type(exc).__name__}: {exc}") from None

    def _run(self, run_id: str) -> Any:
        if safe_name(run_id):
            self._refresh(run_id)
        run = self.folder.run(run_id)
        if run is None:
            raise NotFound(f"no run {run_id!r} in the runs folder")
        return run


def _column(records: Any, run: Any, variant: str, sample: int, read_artifact: Any) -> dict[str, Any]:
    """One trace column of a cell page: the trace, its results and its workspace artifact."""
    try:
        artifact = read_artifact(run, records.case_id, variant, sample)
    except (OSError, ValueError):
        artifact = None
    trace = records.trace(variant, sample) or {}
    return {"variant": variant, "sample": sample, "trace": trace, "tools": tool_rows(trace),
            "results": records.results_of(variant, sample), "artifact": artifact}


def _final_answer(trace: dict[str, Any]) -> Any:
    output = trace.get("output")
    return output.get("final_answer") if isinstance(output, dict) else None


def tool_rows(trace: dict[str, Any]) -> list[tuple[Any, Any, Any]]:
    """(tool, arguments, result) per tool call: a result is matched by its call id, else by position."""
    calls = [c for c in _list(trace.get("tool_calls")) if isinstance(c, dict)]
    results = [r for r in _list(trace.get("tool_results")) if isinstance(r, dict)]
    by_id = {r.get("tool_call_id"): r for r in results if r.get("tool_call_id") is not None}
    rows = []
    used: set[int] = set()
    for index, call in enumerate(calls):
        result = by_id.get(call.get("id")) if call.get("id") is not None else None
        if result is None and index < len(results) and results[index].get("tool_call_id") is None:
            result = results[index]
        if result is not None:
            used.add(id(result))
        rows.append((call.get("name"), call.get("arguments"), None if result is None else result.get("content")))
    rows += [(r.get("name"), None, r.get("content")) for r in results if id(r) not in used]
    return rows


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _meta(run: Any) -> dict[str, Any]:
    meta: dict[str, Any] = run.read_meta()
    return meta


def _display_name(config: dict[str, Any], meta: dict[str, Any]) -> str:
    """The eval's name as its eval.yaml gives it (the run's config snapshot: `agent main`), else its key."""
    info = config.get("eval")
    name = info.get("name") if isinstance(info, dict) else None
    return str(name) if name else str(meta.get("eval_name", ""))


def _config(run: Any) -> dict[str, Any]:
    if not run.config_yaml.is_file():
        return {}
    config = load_yaml_text(run.config_yaml.read_text(encoding="utf-8"))
    return config if isinstance(config, dict) else {}


def _summary(run: Any) -> dict[str, Any] | None:
    try:
        return read_summary(run)
    except (OSError, ValueError):
        return None


def _live(run: Any, summary: dict[str, Any] | None) -> float | None:
    """Seconds since a running run's traces or results last changed; None when it is complete or still."""
    completeness = (summary or {}).get("completeness")
    if isinstance(completeness, dict) and completeness.get("complete") is True:
        return None
    if summary is not None and not isinstance(completeness, dict):
        return None  # a summary that does not say (eval-harness, older runs): taken as finished
    changed = [path.stat().st_mtime for path in (run.traces, run.results) if path.is_file()]
    if not changed:
        return None
    since = max(time.time() - max(changed), 0.0)
    return since if since < LIVE_WINDOW_S else None


def _baseline_variant(config: dict[str, Any], names: list[str]) -> str | None:
    """The run's baseline variant (run.baseline_variant), else its first variant."""
    section = config.get("run")
    wanted = section.get("baseline_variant") if isinstance(section, dict) else None
    if isinstance(wanted, str) and wanted in names:
        return wanted
    return names[0] if names else None


def _names(entry: RunEntry, text: str) -> bool:
    """Whether ``text`` (any case) is in the run's id or its eval's name (the runs list's search)."""
    needle = text.lower()
    return not needle or needle in entry.run_id.lower() or needle in entry.eval_name.lower()


def _int(value: str | None, default: int) -> int:
    try:
        return max(1, int(value)) if value is not None else default
    except ValueError:
        return default


def _page(template: str, **context: Any) -> HTMLResponse:
    return HTMLResponse(render(template, **context))


def _handler(viewer: Viewer, name: str) -> Callable[[Request], Response]:
    """A route's endpoint: the page, or an error page saying what is missing or unreadable."""
    method = getattr(viewer, name)

    def endpoint(request: Request) -> Response:
        try:
            with viewer.slots:
                # Not answered again here: whichever layer composes a page's store queries
                # does that once (compare_runs and eval_history themselves, the run pages
                # theirs), so a replaced store never costs more than one second try.
                response: Response = method(request)
            return response
        except NotFound as exc:
            return HTMLResponse(render("error.html", title="Not found", message=str(exc)), status_code=404)
        except (UnreadableRecordsError, duckdb.Error, OSError, ValueError) as exc:
            return HTMLResponse(render("error.html", title="Unreadable", message=f"could not read: {exc}"),
                                status_code=422)

    endpoint.__name__ = name
    return endpoint


def _healthz(request: Request) -> Response:
    return PlainTextResponse("evalh view")


def _highlight_css(request: Request) -> Response:
    return Response(highlight_css(), media_type="text/css")


def create_app(runs_dir: Path, *, allowed_hosts: tuple[str, ...] | None = LOOPBACK_HOSTS,
               dagster_url: str = DEFAULT_DAGSTER_URL, labeller: str = "viewer", remote_labels: bool = False,
               mirror: RunsMirror | None = None) -> ASGIApp:
    """The viewer over ``runs_dir``. ``allowed_hosts``: Host headers it answers (None: any);
    ``dagster_url``: the Dagster UI its run pages link back to; ``labeller``: who the review
    queue's labels are by; ``remote_labels``: accept labels from clients off this machine;
    ``mirror``: the object-storage runs folder ``runs_dir`` is the copy of."""
    viewer = Viewer(RunsFolder(runs_dir), dagster_url=dagster_url, labeller=labeller,
                    guard=LabelGuard(remote=remote_labels), mirror=mirror)
    preload()
    routes = [
        Route("/", _handler(viewer, "runs")),
        Route("/healthz", _healthz),
        Route("/static/highlight.css", _highlight_css),
        Mount("/static", app=StaticFiles(directory=str(STATIC)), name="static"),
        Route("/runs/{run_id}", _handler(viewer, "run")),
        Route("/runs/{run_id}/variants", _handler(viewer, "variants")),
        Route("/runs/{run_id}/review", _handler(viewer, "review")),
        Route("/runs/{run_id}/review", viewer.answer, methods=["POST"]),
        Route("/runs/{run_id}/case", _handler(viewer, "case")),
        Route("/runs/{run_id}/cases/{case_id:path}", _handler(viewer, "case")),
        Route("/compare/{run_a}/{run_b}", _handler(viewer, "compare")),
        Route("/compare/{run_a}/{run_b}/case", _handler(viewer, "compare_case")),
        Route("/evals/{eval_name}", _handler(viewer, "history")),
        Route("/search", _handler(viewer, "search")),
    ]
    app = Starlette(routes=routes)
    return SecurityHeaders(app, allowed_hosts)
