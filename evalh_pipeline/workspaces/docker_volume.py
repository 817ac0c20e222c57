"""docker_volume: the sandboxed workspace (Filesystem.md, "v1 add: docker_volume").

The cell's files live on a Docker volume mounted at ``/workspace`` of a container from
``image`` (:class:`evalh_pipeline.common.containers.Sandbox`): no network unless
``network: bridge`` is named, a read-only root except ``/workspace`` and a tmpfs ``/tmp``,
CPU, memory, process and disk limits, a non-root user, no Docker socket inside.

- A ``cli`` system's ``command`` runs inside that container with cwd ``/workspace``; a
  ``python_function`` or plugin system finds the container in ``workspace.sandbox`` and
  ``workspace.metadata['sandbox']`` (``workspace.path`` is then an empty host folder:
  writing there changes nothing).
- The fixture is snapshotted (the before manifest) and streamed into the volume; no host
  copy is made. After the run the container is frozen, the
  volume's files are copied out to the host and the collection is tempdir_snapshot's:
  the same FilesystemArtifact, diff, artifacts folder and accounting, plus ``sandbox``
  (the isolation used), which the ``command`` evaluator reads to run inside a fresh
  sandbox over the after-state.
- Container and volume are removed at cleanup; a killed run's are removed by the next run.

eval-harness's keys: ``image`` (here the sandbox's image: it needs ``sh``; no default,
nothing is pulled implicitly), ``copy_from``, ``volume_name`` (a prefix of the volume
names here: one volume per cell).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalh_pipeline.common.containers import LABEL, ContainerError, ContainerRuntime, Sandbox, SandboxSpec
from evalh_pipeline.models import EvalCase, FilesystemArtifact, RunVariant
from evalh_pipeline.workspaces.accounting import WorkspaceAccounting
from evalh_pipeline.workspaces.base import PreparedWorkspace, WorkspaceContext, WorkspaceError
from evalh_pipeline.workspaces.manifest import take_snapshot
from evalh_pipeline.workspaces.ownership import create_container
from evalh_pipeline.workspaces.tempdir_snapshot import TempdirSnapshotConfig, TempdirSnapshotWorkspace

_WORKSPACE_LABEL = "evalh.workspace"


class DockerVolumeConfig(TempdirSnapshotConfig, SandboxSpec):
    """tempdir_snapshot's keys plus the sandbox's (:class:`SandboxSpec`)."""

    type: str = "docker_volume"
    volume_name: str | None = None

    def sandbox_spec(self) -> SandboxSpec:
        """The isolation these keys ask for."""
        return SandboxSpec.model_validate(self.model_dump(include=set(SandboxSpec.model_fields)))


class DockerVolumeWorkspace(TempdirSnapshotWorkspace[DockerVolumeConfig]):
    """A sandbox container per cell; the files are diffed as tempdir_snapshot's are."""

    kind = "docker_volume"
    sandboxed = True

    def __init__(self, config: dict[str, Any], context: WorkspaceContext) -> None:
        super().__init__(config, context)
        self.spec = self.config.sandbox_spec()
        self.runtime = ContainerRuntime(self.spec, context.env)

    def recover_stale(self) -> tuple[int, int]:
        """Host folders as the other kinds; then the containers and volumes whose host folder is gone."""
        result = super().recover_stale()
        label = '{{.Label "' + _WORKSPACE_LABEL + '"}}'
        for kind, name_format in (("ps", "{{.ID}}"), ("volume", "{{.Name}}")):
            command = ["ps", "-a"] if kind == "ps" else ["volume", "ls"]
            try:
                listed = self.runtime.run(*command, "--filter", f"label={_WORKSPACE_LABEL}",
                                          "--format", f"{name_format} {label}").decode()
            except ContainerError:
                return result
            for line in listed.splitlines():
                name, _, folder = line.partition(" ")
                if folder and Path(folder).parent == self.base_path and not Path(folder).exists():
                    self.runtime.quiet(*(["rm", "-f", "-v"] if kind == "ps" else ["volume", "rm", "-f"]), name)
        return result

    def prepare(self, case: EvalCase, variant: RunVariant, sample: int = 0) -> PreparedWorkspace:
        """A sandbox seeded straight from the fixture (no host copy); the before snapshot is the fixture's."""
        container = create_container(self.base_path, f"{case.id}-{variant.name}")
        workspace = PreparedWorkspace(path=container / "tree", container=container, case_id=case.id,
                                      variant_name=variant.name, sample=sample)
        workspace.path.mkdir()  # stays empty: the files live in the volume
        workspace.accounting.workspaces = 1
        try:
            self._start_sandbox(workspace)
        except BaseException:
            self.cleanup(workspace)
            raise
        return workspace

    def _start_sandbox(self, workspace: PreparedWorkspace) -> None:
        source = self.source if self.source is not None else workspace.path
        if not source.is_dir():
            raise WorkspaceError(f"fixture folder not found: {source}")
        # The fixture is what the sandbox gets: its snapshot is the before-state (originals are
        # read from it later, checked against these hashes).
        workspace.before = take_snapshot(source, exclude_top=self.exclude_top)
        workspace.accounting.seeded_bytes += workspace.before.total_bytes
        labels = {_WORKSPACE_LABEL: str(workspace.container)}
        prefix = self.config.volume_name or f"evalh-{workspace.case_id}-{workspace.variant_name}"
        try:
            sandbox = Sandbox.start(self.runtime, self.spec, prefix, labels)
        except ContainerError as exc:
            raise WorkspaceError(f"sandbox not started: {exc}") from None
        workspace.sandbox = sandbox
        workspace.metadata["sandbox"] = sandbox.handle
        workspace.metadata["seed_method"] = "docker-cp"
        try:
            sandbox.put_tree(source)
        except ContainerError as exc:
            raise WorkspaceError(f"the fixture could not be copied into the sandbox: {exc}") from None

    def reset(self, workspace: PreparedWorkspace) -> None:
        """A fresh sandbox for the next attempt (the volume goes with the old one)."""
        self._remove_sandbox(workspace)
        workspace.attempt += 1
        workspace.metadata.clear()
        self._start_sandbox(workspace)

    def collect_artifacts(self, workspace: PreparedWorkspace, *, system_may_run: bool = False) -> FilesystemArtifact:
        """Freeze the container, copy ``/workspace`` out, then collect it as tempdir_snapshot does."""
        sandbox = workspace.sandbox
        if not isinstance(sandbox, Sandbox):
            raise WorkspaceError("the workspace has no sandbox (prepare failed)")
        sandbox.freeze()  # nothing the system left behind runs while the files are read
        try:
            status = self.runtime.state(sandbox.container).get("Status")
        except ContainerError as exc:
            raise WorkspaceError(f"the sandbox is gone: {exc}") from None
        if status not in ("running", "paused"):
            # Its volume is in memory and went with it: there is no after-state to diff.
            raise WorkspaceError(f"the sandbox container stopped ({status}) before its files were collected: "
                                 f"{self.runtime.logs_tail(sandbox.container, 5)}")
        after = workspace.container / f"after-{workspace.attempt}"
        try:
            sandbox.get_tree(after)
        except ContainerError as exc:
            raise WorkspaceError(f"the sandbox's files could not be copied out: {exc}") from None
        self._remove_sandbox(workspace)
        workspace.path = after
        return super().collect_artifacts(workspace)

    def _after_state(self, workspace: PreparedWorkspace) -> dict[str, Any]:
        # The command evaluator runs in a sandbox like this one (the engine it reaches is its own).
        return {"sandbox": self.spec.model_dump(exclude={"binary", "docker_host"})}

    def cleanup(self, workspace: PreparedWorkspace) -> WorkspaceAccounting:
        self._remove_sandbox(workspace)
        return super().cleanup(workspace)

    @staticmethod
    def _remove_sandbox(workspace: PreparedWorkspace) -> None:
        sandbox = workspace.sandbox
        if isinstance(sandbox, Sandbox):
            sandbox.remove()
        workspace.sandbox = None


__all__ = ["DockerVolumeWorkspace", "DockerVolumeConfig", "LABEL"]
