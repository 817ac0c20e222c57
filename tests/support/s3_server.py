"""An S3 API on loopback for the tests: moto's server in this process (``ThreadedMotoServer``).

A real HTTP server speaking S3, reached through s3fs exactly as a bucket would be; its
credentials are moto's test ones, set in the environment of the block (and of the processes
the test starts, through :func:`s3_env`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.redis_server import free_port

# moto accepts any credentials; these are the ones its documentation uses.
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


@dataclass(frozen=True)
class S3Server:
    """Where the S3 API answers, and the variables a process needs to reach it through s3fs."""

    endpoint: str

    def env(self) -> dict[str, str]:
        """Credentials and the endpoint (botocore's ``AWS_ENDPOINT_URL_S3``, which s3fs honours)."""
        return {**CREDENTIALS, "AWS_ENDPOINT_URL_S3": self.endpoint, "AWS_EC2_METADATA_DISABLED": "true"}

    def filesystem(self):
        """A fresh s3fs file system on this server (no cache shared with other instances)."""
        import s3fs

        return s3fs.S3FileSystem(key=CREDENTIALS["AWS_ACCESS_KEY_ID"], secret=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
                                 endpoint_url=self.endpoint, skip_instance_cache=True)

    def make_bucket(self, name: str) -> str:
        """Create bucket ``name``; returns ``s3://name``."""
        self.filesystem().mkdir(name)
        return f"s3://{name}"


def machine_env(tmp_path: Path, env: dict[str, str], server: S3Server, name: str) -> dict[str, str]:
    """The environment of `evalh` on machine ``name``, reaching ``server``: its own cache (working
    copies, fetched runs) and Dagster home, sharing no local path with another machine."""
    home = tmp_path / name / "dagster_home"
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    return {**env, **server.env(), "EVALH_CACHE_DIR": str(tmp_path / name / "cache"), "DAGSTER_HOME": str(home)}


@contextmanager
def running_s3() -> Iterator[S3Server]:
    """moto's S3 server on 127.0.0.1 for the block."""
    from moto.server import ThreadedMotoServer

    # werkzeug logs every request on stderr: the tests' output is not the place.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield S3Server(f"http://127.0.0.1:{port}")
    finally:
        server.stop()
