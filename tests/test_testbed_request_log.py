"""The test bed's reading of the API server's request log (``tests/e2e/testbed.py``), on a log
written here: lines counted from a mark, a last line still being written left for later, one event
per request, and a user whose name JSON escapes still found."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.testbed import ApiServer


def _event(user: str, verb: str, audit_id: str, resource: str = "pods") -> dict[str, Any]:
    return {"auditID": audit_id, "verb": verb, "user": {"username": user}, "objectRef": {"resource": resource}}


def _line(event: dict[str, Any]) -> str:
    # as Go's encoder writes it: <, > and & escaped
    return json.dumps(event, separators=(",", ":")).replace("<", "\\u003c").replace(">", "\\u003e") + "\n"


def test_marks_count_complete_lines_and_a_partial_line_counts_once_complete(tmp_path: Path) -> None:
    cluster = ApiServer(tmp_path, None)  # type: ignore[arg-type]  # never started: only its folder is read
    assert cluster.audit_mark() == 0 and cluster.requests_by("alice") == []  # no log yet
    first, second = _line(_event("alice", "patch", "1")), _line(_event("alice", "create", "2"))
    cluster.audit_log.write_text(first + second[:20])  # the API server is writing the second line
    mark = cluster.audit_mark()
    assert mark == 1
    assert [e["auditID"] for e in cluster.requests_by("alice")] == ["1"]
    with cluster.audit_log.open("a") as log:
        log.write(second[20:])
    assert [e["auditID"] for e in cluster.requests_by("alice", since=mark)] == ["2"]
    assert cluster.audit_mark() == 2


def test_one_event_per_request_by_user_and_verb(tmp_path: Path) -> None:
    cluster = ApiServer(tmp_path, None)  # type: ignore[arg-type]
    odd = 'x<y>&"z\\'  # a name JSON escapes, as the API server's encoder writes it
    events = [
        _event("alice", "watch", "w"),
        _event("alice", "watch", "w"),  # ResponseStarted, then ResponseComplete: one request
        _event("bob", "patch", "b"),
        _event("alice", "patch", "p"),
        _event(odd, "delete", "o"),
        _event("alice-2", "patch", "a2"),  # a name the user's is the start of
    ]
    cluster.audit_log.write_text("".join(_line(e) for e in events) + "not json\n")
    assert [e["auditID"] for e in cluster.requests_by("alice")] == ["w", "p"]
    assert [e["auditID"] for e in cluster.requests_by("alice", verbs=("patch",))] == ["p"]
    assert [e["auditID"] for e in cluster.writes_by(odd)] == ["o"]
    assert [e["auditID"] for e in cluster.requests_by_verb("patch", since=3)] == ["p", "a2"]
    assert cluster.audit_mark() == len(events) + 1
