"""One TLS context for every outbound HTTPS client (systems, judges, embedders).

Building a context loads the CA bundle, about 50 ms of CPU; a client per call (as the
judges open) would pay that on every call. A context is safe to share across clients,
threads and event loops once it is configured.
"""

from __future__ import annotations

import functools
import ssl

import certifi


@functools.cache
def default_ssl_context() -> ssl.SSLContext:
    """The shared verifying context (certifi's CA bundle), built on first use."""
    return ssl.create_default_context(cafile=certifi.where())
