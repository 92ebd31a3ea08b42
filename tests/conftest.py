"""Settings for the whole suite.

Hypothesis: no per-example deadline and no "too slow" health check. The suite runs on shared 2-core
machines (CI and development) where another process can hold the CPU for seconds; a property test
must fail for a wrong answer, never for a slow machine. The number of examples stays each test's own.
"""

from hypothesis import HealthCheck, settings

settings.register_profile("workerclass", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("workerclass")
