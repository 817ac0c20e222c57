"""Every error evalh raises on purpose derives from one base, :class:`EvalhError`.

Three kinds sit under it, and what a caller does with each differs:

- :class:`UserError`: the input is wrong (eval.yaml, a cases or labels file, a source to
  import, a name no registry knows). The message is one line naming the file, line and key
  and what is allowed; the CLI prints it without a traceback and exits 1. Nothing was run or
  half-written.
- :class:`InfrastructureError`: something outside the user's input failed (Dagster, the
  run folder's lock, a trace store, git, Docker, the network). The CLI exits 2.
- :class:`CellError`: a failure inside one cell (the system under test, a workspace, a judge,
  an evaluator's input). It is recorded on the trace or result as its error type and never
  aborts a run.

Each concrete class keeps the builtin base it had before the hierarchy existed (``ValueError``,
``RuntimeError``, ``LookupError``, ``OSError``, PyYAML's ``ComposerError``) as a second base,
so code that catches the builtin keeps catching it. The tree (module of each class in
brackets)::

    EvalhError
    ├── UserError
    │   ├── ConfigError                [config.errors]
    │   ├── CronError                  [config.cron]            (ValueError)
    │   ├── MissingEnvVar              [config.env]
    │   ├── UnknownTypeError           [registry]               (LookupError)
    │   ├── SchemaVersionError         [models.versioning]      (ValueError)
    │   ├── PriceTableError            [common.pricing]         (ValueError)
    │   ├── YamlLimitError             [common.yaml_files]      (ComposerError)
    │   ├── MissingTemplateField       [common.templating]      (LookupError)
    │   ├── NotARegularFile            [common.file_kinds]      (OSError)
    │   ├── UnknownPool                [common.ratelimits]      (ValueError)
    │   ├── CorruptRecordError         [store.jsonl]            (ValueError)
    │   ├── UnreadableRecordsError     [queries.sql]            (ValueError)
    │   ├── BackendNotFound            [llm.registry]           (ValueError)
    │   ├── EmbedderUnavailable        [embedders.registry]     (ValueError)
    │   ├── LabelFileError             [runner.labelling]       (ValueError)
    │   ├── NotARunFolder              [runs]                   (FileNotFoundError)
    │   ├── BadSource                  [importers.report]
    │   ├── LabelRefused               [view.review]
    │   └── LabelRejected              [view.review]
    ├── InfrastructureError
    │   ├── NoSystemAnswered           [defs.run_options]
    │   ├── HttpError                  [common.http_client]
    │   │   └── TransportError
    │   │       ├── TimeoutException
    │   │       │   ├── ConnectTimeout
    │   │       │   └── ReadTimeout
    │   │       ├── ConnectError
    │   │       ├── RemoteProtocolError
    │   │       └── ReadError
    │   ├── LimitGaveUp                [common.ratelimits]
    │   ├── GitError                   [common.git]             (RuntimeError)
    │   │   └── GitNotFound
    │   ├── ContainerError             [common.containers]      (RuntimeError)
    │   ├── RunDirectoryBusy           [store.locking]          (RuntimeError)
    │   ├── PublishError               [outputs.publishing]     (RuntimeError)
    │   ├── StoreError                 [outputs.stores.base]    (RuntimeError)
    │   ├── EmbedderError              [embedders.base]         (RuntimeError)
    │   │   └── EmbedderRateLimited
    │   ├── WorkspaceAccountingError   [workspaces.accounting]  (RuntimeError)
    │   └── WebhookError               [outputs.webhook]        (RuntimeError)
    └── CellError
        ├── AdapterError               [systems.base]
        ├── RaisedBySystem             [systems.base]
        ├── WorkerLost                 [systems.python_function]
        ├── StreamTooLarge             [systems.http_stream]
        ├── WorkspaceError             [workspaces.base]        (RuntimeError)
        ├── SeedError                  [workspaces.seeding]     (RuntimeError)
        ├── PatchError                 [evaluators.unified_patch] (ValueError)
        ├── BadJudgeAnswer             [judges.prompt]          (ValueError)
        └── JudgeError                 [llm.chat]               (RuntimeError)
            ├── JudgeTransientError
            │   └── JudgeRateLimited
            ├── JudgeRateLimitedOut    [judges.judge]
            ├── JudgeUnreachable       [judges.judge]
            └── JudgeCostLimitExceeded [judges.judge]

Left out on purpose: exceptions that are control flow inside one module and never leave it
(``systems.python_worker._Raised``, ``evaluators.promptfoo_assert._Fixed``, the viewer's
``NotFound`` page signal).

This module is the bottom layer: it imports nothing of the package, so every layer may use it.
"""

from __future__ import annotations


class EvalhError(Exception):
    """The base of every error evalh raises on purpose."""


class UserError(EvalhError):
    """The input is wrong: the message is one line (file, line, key, what is allowed), shown
    without a traceback; nothing was run or half-written."""


class InfrastructureError(EvalhError):
    """Something outside the user's input failed (Dagster, a lock, a store, git, Docker, the
    network): the command stops with exit 2."""


class CellError(EvalhError):
    """A failure inside one cell (system under test, workspace, judge, evaluator input),
    recorded on its trace or result; it never aborts a run."""


__all__ = ["CellError", "EvalhError", "InfrastructureError", "UserError"]
