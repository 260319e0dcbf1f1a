"""Shared pytest configuration: hypothesis profiles.

* ``ci`` (selected when ``CI`` is set): bounded, derandomized, so CI runs
  in minutes and a failure reproduces;
* ``dev`` (default): a few more examples, random seeds;
* ``slow``: many examples, for ``pytest -m slow`` runs.

Select another with ``HYPOTHESIS_PROFILE=slow pytest ...``.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=25,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile("dev", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("slow", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
