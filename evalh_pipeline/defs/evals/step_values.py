"""The values Dagster passes between the steps of an eval run's graph, kept in the run's folder.

The ``traces`` graph passes two kinds of value: the shard plan (each :class:`Shard`, to its
shard step) and each shard's counts (a ``TraceStats``, to the collect step). Dagster's
default I/O manager would keep them in the ``$DAGSTER_HOME`` of the machine that made them,
which a step on another machine cannot read. This I/O manager keeps them where every
machine of the run reads: the run's canonical folder (its ``s3://`` URL, or its local folder),
under ``.step_values/<Dagster run id>/<step key>/<output>[.<mapping key>].json``, as plain JSON
of the output's declared type (a dataclass, through pydantic both ways, never a pickle).

A re-execution loads the outputs of the steps it does not run from its parent run's
folder there, on whichever machine it runs. The folder is hidden: never published or
pulled by the working copies (outputs/publishing.py), and removed with its run. ``evalh run``'s
in-process executor writes them there too: the UI's "Re-execute from failure" of a CLI run
runs in another process and reads them (a few small files a run).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
from fsspec.implementations.local import LocalFileSystem
from pydantic import TypeAdapter

from evalh_pipeline.config import EvalSpec
from evalh_pipeline.defs.evals.runs import valid_run_id
from evalh_pipeline.defs.evals.names import PARTITION_TAG
from evalh_pipeline.store.object_storage import encode_key_part
from evalh_pipeline.outputs.publishing import run_location
from evalh_pipeline.store.run_dir import write_atomic

FOLDER = ".step_values"


class RunFolderValues(dg.IOManager):
    """Step values of ``spec``'s runs as JSON files in each run's canonical folder."""

    def __init__(self, spec: EvalSpec) -> None:
        self.spec = spec

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        if obj is None:  # a Nothing output (the asset's own): nothing to keep
            return
        data = TypeAdapter(type(obj)).dump_json(obj)
        fs, path = self._where(context, context)
        # Whole or not at all: a step killed while writing leaves no half value to load.
        if isinstance(fs, LocalFileSystem):
            write_atomic(Path(path), data.decode("utf-8"))
        else:
            fs.pipe_file(path, data)  # an object store puts one object whole

    def load_input(self, context: dg.InputContext) -> Any:
        upstream = context.upstream_output
        assert upstream is not None
        fs, path = self._where(upstream, context)
        return TypeAdapter(upstream.dagster_type.typing_type).validate_json(fs.cat_file(path))

    def _where(self, output: dg.OutputContext, context: dg.OutputContext | dg.InputContext) -> tuple[Any, str]:
        """The file system and path of ``output``'s value (of the run ``context`` works on)."""
        import fsspec

        partition = context.step_context.dagster_run.tags.get(PARTITION_TAG, "")
        folder = run_location(self.spec, valid_run_id(partition))
        fs, root = fsspec.core.url_to_fs(folder)
        parts = output.get_identifier()  # Dagster run id, step key, output name[, mapping key]
        name = ".".join(encode_key_part(part) for part in parts[2:])
        return fs, "/".join([root.rstrip("/"), FOLDER, encode_key_part(parts[0]), encode_key_part(parts[1]),
                             f"{name}.json"])


def step_values_manager(spec: EvalSpec) -> dg.IOManagerDefinition:
    """The I/O manager of ``spec``'s graph steps (:class:`RunFolderValues`)."""
    return dg.IOManagerDefinition.hardcoded_io_manager(
        RunFolderValues(spec), f"The values passed between the steps of a run of {spec.name}, in its run folder.")
