"""The viewer's review queue: a run's judged cells to label, one at a time, blind by default.

The queue is `evalh label review`'s (runner/labelling.py ``review_queue``: the same order, the
same label keys) and an answer is stored as that command stores it (store/labels.py
``append_labels``): the eval's label file is the only thing the viewer ever writes, never a
trace, a result or a summary.

A label is written only by a POST that
- comes from this machine (a loopback client), unless the viewer was started to accept
  labels from elsewhere (``evalh view --accept-remote-labels``);
- is not cross-site: its ``Sec-Fetch-Site``, when sent, is ``same-origin``, and its
  ``Origin``, when sent, is the viewer's own (or ``null``, which the pages' no-referrer policy
  makes a browser send, together with ``Sec-Fetch-Site: same-origin``);
- carries the viewer's token (random, made when the viewer starts, written into the review
  page's form), which a page elsewhere cannot read.
Anything else is refused with 403 (a client elsewhere or a cross-site request before its body
is read) and nothing is written.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode

from starlette.requests import Request

from evalh_pipeline.errors import UserError
from evalh_pipeline.models.label import HumanLabel
from evalh_pipeline.queries.labelled_cells import JudgedCell, judged_cells
from evalh_pipeline.runner.labelling import REASONS, label_of, review_queue
from evalh_pipeline.store.labels import append_labels, read_labels
from evalh_pipeline.store.run_dir import RunDirectory
from evalh_pipeline.view.catalog import safe_name
from evalh_pipeline.view.links import is_loopback
from evalh_pipeline.view.rendering import part

QUEUE_LIMIT = 50  # cells a queue lists at once (as `evalh label review --limit`)
MAX_FORM_BYTES = 16_384  # an answer's form is a few hundred bytes
KEYS = (("y", "it passes"), ("n", "it fails"), ("s", "skip"), ("j", "next in the queue"),
        ("k", "previous in the queue"), ("u", "back to the run"))


class LabelRefused(UserError):
    """A label POST the viewer does not accept (403: nothing written)."""


class LabelRejected(UserError):
    """A label POST that names no cell to label (400/409: nothing written)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class LabelGuard:
    """Who may write a label: the per-viewer token and whether other machines may."""

    remote: bool = False
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    def check_origin(self, request: Request) -> None:
        """Raise :class:`LabelRefused` for a client elsewhere (unless allowed) or a cross-site request."""
        client = request.client.host if request.client is not None else ""
        if not self.remote and not is_loopback(client):
            raise LabelRefused("labels are accepted from this machine only (evalh view --accept-remote-labels)")
        own = f"{request.url.scheme}://{request.headers.get('host', '')}"
        origin, site = request.headers.get("origin"), request.headers.get("sec-fetch-site")
        if site is not None and site != "same-origin":
            raise LabelRefused(f"a {site} request is refused: labels come from the viewer's own pages")
        # The pages' Referrer-Policy (no-referrer) makes a browser send "Origin: null" with the
        # viewer's own form: taken as the viewer's only when the browser also says same-origin.
        if origin is not None and origin != own and not (origin == "null" and site == "same-origin"):
            raise LabelRefused(f"a label from another origin ({origin}) is refused")

    def check_token(self, given: str) -> None:
        """Raise :class:`LabelRefused` unless ``given`` is this viewer's token."""
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            raise LabelRefused("the form's token is not this viewer's (reload the review page)")


@dataclass(frozen=True)
class QueueView:
    """What a review page shows: the queue's filter, seed and mode, and the position in it."""

    evaluator: str = ""
    seed: int = 0
    blind: bool = True
    at: int = 1

    @classmethod
    def of(cls, values: dict[str, str]) -> "QueueView":
        """From a query string's or a form's values (bad numbers fall back to the defaults)."""
        return cls(evaluator=values.get("evaluator", ""), seed=_number(values.get("seed"), 0, minimum=0),
                   blind=values.get("blind") != "0", at=_number(values.get("at"), 1, minimum=1))

    def href(self, run_id: str, **extra: Any) -> str:
        """The review page of ``run_id`` at this view (``extra``: more query values, e.g. at=)."""
        values = {"evaluator": self.evaluator, "seed": self.seed, "blind": 1 if self.blind else 0, "at": self.at,
                  **extra}
        return f"/runs/{part(run_id)}/review?" + urlencode({k: v for k, v in values.items() if v not in ("", None)})


def _number(value: str | None, default: int, *, minimum: int) -> int:
    try:
        return max(minimum, int(value)) if value is not None else default
    except ValueError:
        return default


def eval_of(run: RunDirectory) -> str:
    """The run's eval (run.json), whose label file the queue reads and writes; "" when it has
    none a file name can be made of."""
    name = str(run.read_meta().get("eval_name") or "")
    return name if safe_name(name) else ""


def review_context(run: RunDirectory, view: QueueView, *, labeller: str, guard: LabelGuard,
                   last: dict[str, str]) -> dict[str, Any]:
    """The review page's values: the queue, the cell at ``view.at`` and the last answer."""
    eval_name = eval_of(run)
    labels = read_labels(run.path.parent, eval_name) if eval_name else {}
    queue = review_queue(run, labels, evaluator=view.evaluator or None, labeller=labeller, limit=QUEUE_LIMIT,
                         seed=view.seed) if eval_name else []
    at = min(view.at, len(queue)) if queue else 0
    return {"run_id": run.run_id, "eval_name": eval_name, "queue": queue, "at": at,
            "item": queue[at - 1] if at else None, "view": view, "labeller": labeller, "token": guard.token,
            "keys": KEYS, "reasons": REASONS, "last": last, "labelled": len(labels)}


async def read_form_body(request: Request) -> bytes:
    """The request's body, refused past :data:`MAX_FORM_BYTES` (never read whole into memory)."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise LabelRejected(f"a label form of more than {MAX_FORM_BYTES} bytes", 413)
    return bytes(body)


def parse_form(body: bytes) -> dict[str, str]:
    """A urlencoded form's values (the last of a repeated name wins)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise LabelRejected("a label form that is not UTF-8") from None
    return {k: v[-1] for k, v in parse_qs(text, keep_blank_values=True).items()}


def _cell(run: RunDirectory, form: dict[str, str]) -> JudgedCell:
    """The judged cell the form answers, as the page showed it."""
    try:
        wanted = (form["case_id"], form["variant"], int(form["sample"]), form["evaluator"])
        shown = (form["content_hash"], form["evaluator_hash"])
    except (KeyError, ValueError):
        raise LabelRejected("a label form without case_id, variant, sample, evaluator, content_hash "
                            "and evaluator_hash") from None
    for cell in judged_cells(run):
        if (cell.case_id, cell.variant_name, cell.sample, cell.evaluator) == wanted:
            if (cell.content_hash, cell.evaluator_hash) != shown:
                raise LabelRejected("the cell was traced or judged again since the page was shown: reload it", 409)
            return cell
    raise LabelRejected(f"run {run.run_id} has no verdict of {wanted[3]} on case {wanted[0]!r}, variant "
                        f"{wanted[1]!r}, sample {wanted[2]}", 409)


def record_label(run: RunDirectory, form: dict[str, str], *, labeller: str,
                 append: Callable[[Path, str, list[HumanLabel]], int] = append_labels) -> str:
    """Store the answer in ``form`` as a label of its cell's judged content (with ``append``:
    the eval's label file beside the run, or at the URL the runs folder was copied from); the
    review page to show next (the same position, now holding the next cell, with the judge's
    verdict on the cell just answered)."""
    if form.get("passed") not in ("true", "false"):
        raise LabelRejected("passed: must be true or false")
    eval_name = eval_of(run)
    if not eval_name:
        raise LabelRejected(f"run {run.run_id} names no eval to keep labels for", 409)
    cell = _cell(run, form)
    passed = form["passed"] == "true"
    append(run.path.parent, eval_name, [label_of(cell, passed, None, labeller=labeller,
                                                        now=datetime.now(timezone.utc))])
    return QueueView.of({**form, "evaluator": form.get("evaluator_filter", "")}).href(run.run_id, last_case=cell.case_id, last_variant=cell.variant_name,
                                   last_sample=cell.sample, last_evaluator=cell.evaluator,
                                   you="pass" if passed else "fail", judge="pass" if cell.passed else "fail")
