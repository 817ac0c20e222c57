"""The adversarial suite: hostile input and abuse, each test an attempt a user made.

Property-based tests here run under a fixed budget: the ``adversarial`` hypothesis
profile is derandomized (the same examples on every machine and every CI run) and keeps
no example database in the repository. ``HYPOTHESIS_PROFILE=explore`` draws fresh,
random examples, more of them, for a local hunt.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "adversarial", derandomize=True, database=None, max_examples=300, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("explore", max_examples=5000, deadline=None, database=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "adversarial"))
