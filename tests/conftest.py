"""Settings and fixtures for the whole suite.

Hypothesis: no per-example deadline and no "too slow" health check. The suite runs on shared 2-core
machines (CI and development) where another process can hold the CPU for seconds; a property test
must fail for a wrong answer, never for a slow machine. The number of examples stays each test's own.

``chart_text``: Cozystack's main chart with our chart gate (read from the upstream mirror and patched),
as the chart in effect of every State, ChartInput and Effective the test builds, as ``--chart`` gives it
on the command line (the gate: pools may select a class, and the port renders the same bytes). The
talos-reconcile Job (and the TalosConfigTemplate it applies) are the chart's own text, which the
package does not ship: the tests that render them use this fixture, and skip without the mirror
(set ``WORKERCLASS_SHARED``), failing instead under ``CI=true``.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

from tests.shared import given_chart
from workerclass.chart import source
from workerclass.chart.source import ChartSource

settings.register_profile("workerclass", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("workerclass")


@pytest.fixture
def chart_text(monkeypatch: pytest.MonkeyPatch) -> ChartSource:
    chart = given_chart("main+gate")
    monkeypatch.setattr(source, "_SHIPPED", chart)
    return chart
