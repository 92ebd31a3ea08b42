"""The test bed's build script (``scripts/testbed.py``): its two lanes, what it records, a failure.

The real components take minutes to build from the Go module proxy; here each is a stand-in
build (a command run through the script's own ``run``, so its CPU is counted), enough to show
that the lanes run at once, that a cached component is not built again, that a failed lane lets
the other finish before the failure is told, and that nothing half-built is left as built.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "testbed.py"


@pytest.fixture
def script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    spec = importlib.util.spec_from_file_location("workerclass_testbed_script_under_test", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setenv("WORKERCLASS_TESTBED", str(tmp_path / "cache"))
    return module


def stand_ins(
    script: Any, names: tuple[tuple[str, ...], ...], log: list[tuple[str, str, float]], fail: str = ""
) -> None:
    lock = threading.Lock()

    def builder(name: str) -> Any:
        def build(dest: Path, gover: str) -> None:
            with lock:
                log.append((name, "start", time.monotonic()))
            script.run([sys.executable, "-c", "import time; time.sleep(0.3)"], dest, {})
            if name == fail:
                raise SystemExit(f"testbed: {name} failed")
            (dest / name).write_text("built")
            with lock:
                log.append((name, "end", time.monotonic()))

        return build

    script.COMPONENTS = [(name, "v1", name, builder(name)) for lane in names for name in lane]
    script.LANES = names


def test_two_lanes_build_at_once_and_a_cached_component_is_not_built_again(script: Any) -> None:
    log: list[tuple[str, str, float]] = []
    stand_ins(script, (("a1", "a2"), ("b1", "b2")), log)
    assert script._build_all("go0") == 0
    starts = {name: at for name, what, at in log if what == "start"}
    ends = {name: at for name, what, at in log if what == "end"}
    assert starts["b1"] < ends["a1"] and starts["a1"] < ends["b1"]  # the lanes overlap
    assert ends["a1"] <= starts["a2"] and ends["b1"] <= starts["b2"]  # one at a time within a lane
    stats = json.loads((script.cache_root() / "build-stats.json").read_text())
    assert set(stats) == {"a1-v1-go0", "a2-v1-go0", "b1-v1-go0", "b2-v1-go0", "last-build"}
    assert all(stats[key]["cpu_s"] >= 0 and stats[key]["wall_s"] >= 0.3 for key in stats if key != "last-build")
    assert stats["last-build"]["lanes"] == [["a1", "a2"], ["b1", "b2"]]
    log.clear()
    assert script._build_all("go0") == 0
    assert log == []  # everything cached


def test_a_failed_lane_lets_the_other_finish_and_leaves_nothing_half_built(script: Any) -> None:
    log: list[tuple[str, str, float]] = []
    stand_ins(script, (("a1", "a2"), ("b1", "b2")), log, fail="a1")
    with pytest.raises(SystemExit, match="a1 failed"):
        script._build_all("go0")
    built = {name for name, what, _ in log if what == "end"}
    assert built == {"b1", "b2"}  # a2 waits behind a1 in its lane; the other lane ends
    assert not (script.component_dir("a1", "v1", "go0") / "a1").exists()
    assert (script.component_dir("a1", "v1", "go0").with_name("a1-v1-go0.partial")).exists()
    assert (script.component_dir("b2", "v1", "go0") / "b2").exists()
