"""One admission review over HTTP: headers checked, the body read under its limits, the review
decoded, decided by the core against one State snapshot, and encoded.

Its edge: the per-request path and nothing of the server's lifecycle. :class:`ReviewHandler` is
the part of :class:`~.server.WebhookServer` that answers a review path (the server inherits it
and owns listening, readiness, metrics exposition and shutdown); kept in a class of its own so
that each module stays readable, with no indirection per request (plain attributes and methods,
bound once per route by :meth:`ReviewHandler._handler`). :class:`ByteBudget` bounds the bytes of
bodies being read at once.

Bad input gets a clear answer and never a crash: bodies over the limit get 413, slow bodies 408,
non-JSON or a wrong envelope 400, other media types 415; a readable review whose request is wrong
(unknown operation, missing object, another kind) gets a denial with ``status.code`` 400; while
the source has no snapshot every review is denied with the reason (fail closed, never a guess).
While the source's snapshot is not fully current (its ``staleness()`` lines,
:func:`~.sources.staleness`), every answer decided on it, allowed or denied, carries those lines
after the decision's own warnings.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, NamedTuple

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from ..adapters.kube import short_error
from ..adapters.sync import where as where_raised
from ..admission import mutate, validate
from ..admission.decision import Decision
from ..api.resources import CLASS_SELECTORS, LOOKED_UP, WORKER_CLASS
from ..state import State
from . import review as wire
from .connections import ConnectionGuard
from .livereads import LIMITED, LiveReads
from .logtext import escaped, identity_text, uid_text
from .metrics import WebhookMetrics
from .routes import Route
from .settings import Settings
from .sources import StateSource, staleness

__all__ = ["ByteBudget", "Decider", "ReviewHandler", "core_deciders", "looked_up"]

logger = logging.getLogger("workerclass.webhook")


Decider = Callable[[State, str, dict[str, Any] | None, dict[str, Any] | None], Decision]


def core_deciders() -> dict[str, Decider]:
    """The core's ``mutate`` and ``validate``, by the route's decider name."""
    return {"mutate": mutate, "validate": validate}


def looked_up(review: wire.Review, decision: Decision) -> frozenset[str]:
    """The kinds ``decision`` rests on, to be read live before it is answered: a denial's codes'
    (:data:`~workerclass.api.resources.LOOKED_UP`: what was not found), and the pool kinds for a
    WorkerClass DELETE (allowed because no pool selects the class, or denied ``ClassInUse`` because
    one does: either may have changed a moment ago). Empty for every other decision (the usual case)."""
    if review.operation == "DELETE" and review.kind == WORKER_CLASS.kind:
        return frozenset(CLASS_SELECTORS)
    if not decision.allowed:
        return frozenset(kind for violation in decision.denials for kind in LOOKED_UP.get(violation.code, ()))
    return frozenset()


class _Recheck(NamedTuple):
    """A decision to confirm with a live read of ``kinds`` before it is answered."""

    route: Route
    review: wire.Review
    decision: Decision
    kinds: frozenset[str]
    #: the source's ``fresher(kinds, namespace)`` (:meth:`~workerclass.adapters.kube.ClusterCache.fresher`)
    fresher: Callable[[frozenset[str], str | None], Awaitable[State | None]]


#: an encoded answer (its metrics result and the response), or a decision to confirm first
_Outcome = tuple[str, web.Response] | _Recheck


class ReviewHandler:
    """Answers the review paths; :class:`~.server.WebhookServer` sets these attributes up."""

    source: StateSource
    settings: Settings
    metrics: WebhookMetrics
    _deciders: dict[str, Decider]
    _draining: bool
    _in_flight: int
    #: made by ``stop`` when it has requests to wait for, set by the last one to finish
    _idle: asyncio.Event | None
    _guard: ConnectionGuard | None
    _budget: ByteBudget
    _live_reads: LiveReads

    def _answered(self, request: web.Request, response: web.StreamResponse) -> None:
        """Tell the connection guard an answer is made (the connection is idle from now, unless it closes)."""
        guard = self._guard
        if guard is not None:
            # a connection that closes after this answer (a refused body, draining) stays busy while
            # aiohttp drops the rest of what the client sends: those bytes are no new request
            guard.request_finished(request.protocol, reusable=response.keep_alive is not False and request.keep_alive)

    def _handler(self, route: Route) -> Callable[[web.Request], Any]:
        async def handle(request: web.Request) -> web.StreamResponse:
            started = time.perf_counter()
            if self._guard is not None:  # busy (a request pipelined behind another had no bytes of its own)
                self._guard.request_started(request.protocol)
            self._in_flight += 1
            try:
                result, response = await self._answer(request, route)
            finally:
                self._in_flight -= 1
                if self._in_flight == 0 and self._idle is not None:
                    self._idle.set()
            if self._draining:
                response.force_close()  # the client reconnects, to a replica that is not stopping
            self.metrics.observe(route.name, result, time.perf_counter() - started)
            self._answered(request, response)
            return response

        return handle

    def not_ready_reason(self) -> str:
        if self._draining:
            return "the server is shutting down"
        return self.source.reason or "the state has not synced"

    async def _answer(self, request: web.Request, route: Route) -> tuple[str, web.StreamResponse]:
        problem = self._check_headers(request)
        if problem is not None:
            return "rejected", problem
        max_body = self.settings.max_body
        try:
            content = request.content
            if content.is_eof():
                # The usual case: the whole body came with the headers. Take it from the buffer
                # (what request.read() would return, without its copies and awaits); the size
                # limit is checked the same.
                body = content.read_nowait()
                if len(body) > max_body:
                    return "rejected", _error(413, f"the request body is larger than {max_body} bytes", close=True)
            else:
                # A body still on its way is read under the budget of bytes being read at once
                # (so many connections sending large bodies cannot add up past the memory limit)
                # and the body timeout, which also bounds the wait for budget.
                need = min(request.content_length or max_body, max_body)
                async with asyncio.timeout(self.settings.body_timeout):
                    taken = await self._budget.take(need)
                    try:
                        body = await request.read()
                    finally:
                        self._budget.give(taken)
        except TimeoutError:
            logger.warning("%s: request body not received within %gs", route.name, self.settings.body_timeout)
            message = f"the request body did not arrive within {self.settings.body_timeout:g}s"
            return "rejected", _error(408, message, close=True)
        except web.HTTPRequestEntityTooLarge:
            return "rejected", _error(413, f"the request body is larger than {max_body} bytes", close=True)
        except (HttpProcessingError, ConnectionError, ValueError) as error:
            message = f"the request body could not be read ({type(error).__name__})"
            return "rejected", _error(400, message, close=True)
        outcome = self._decide(route, body)
        if isinstance(outcome, _Recheck):
            return await self._rechecked(outcome)
        return outcome

    def _decide(self, route: Route, body: bytes) -> _Outcome:
        """Decode, decide and encode one review (no awaits: the body is all there), unless the
        decision must be confirmed with a live read first (:func:`looked_up`)."""
        try:
            review = wire.decode(body, route.target)
        except wire.EnvelopeError as error:
            logger.warning("%s: not an AdmissionReview: %s", route.name, error.message)
            return "rejected", _error(error.status, error.message)
        except wire.RequestError as error:
            logger.warning("%s: uid=%s refused: %s", route.name, uid_text(error.uid), error.message)
            answer = wire.refusal(error.uid, 400, "BadRequest", error.message)
            return "bad_request", _review(answer)

        if review.dry_run:
            # Answered exactly like the real request: this webhook has no side effects to skip.
            self.metrics.dry_run.labels(route.name).inc()

        state = self.source.state
        if state is None:
            reason = self.not_ready_reason()
            logger.warning(
                "%s: uid=%s %s %s refused, not ready: %s",
                route.name,
                uid_text(review.uid),
                review.operation,
                identity_text(review.namespace, review.name),
                reason,
            )
            answer = wire.refusal(
                review.uid,
                503,
                "ServiceUnavailable",
                f"workerclass admission is not ready and refuses rather than guesses: {reason}",
            )
            return "not_ready", _review(answer)

        return self._judged(route, review, state, recheck=True)

    def _judged(self, route: Route, review: wire.Review, state: State, *, recheck: bool) -> _Outcome:
        """The decision on ``state``, encoded; or, when ``recheck`` and the decision rests on an
        object not being there that the source can read live, what :meth:`_rechecked` needs."""
        decide = self._deciders[route.decider]
        try:
            decision = decide(state, review.operation, review.obj, review.old)
        except Exception as error:
            # The traceback's frames locate the bug; its message could quote the object, so it stays out.
            where = where_raised(error)
            logger.error(
                "%s: uid=%s %s %s: the core raised %s at %s",
                route.name,
                uid_text(review.uid),
                review.operation,
                identity_text(review.namespace, review.name),
                type(error).__name__,
                where,
            )
            answer = wire.refusal(
                review.uid,
                500,
                "InternalError",
                f"workerclass admission failed on this request ({type(error).__name__}) and refuses it",
            )
            return "error", _review(answer)

        if recheck:
            kinds = looked_up(review, decision)
            fresher = getattr(self.source, "fresher", None) if kinds else None
            if fresher is not None:  # a source that can read live (the cluster cache)
                return _Recheck(route, review, decision, kinds, fresher)
        return self._encoded(route, review, decision)

    async def _rechecked(self, pending: _Recheck) -> tuple[str, web.Response]:
        """Read the kinds ``pending``'s decision rests on live and decide again on them when the
        cache was behind; on a failed or slow read the cache's decision stands (logged)."""
        route, review = pending.route, pending.review
        namespace = review.namespace or None
        try:
            async with asyncio.timeout(self.settings.live_read_timeout):
                # only a list of the pools of every namespace (a WorkerClass DELETE's) is costly:
                # the bucket bounds those; the others (classes, one namespace's apps) are shared only
                costly = namespace is None and not pending.kinds.isdisjoint(CLASS_SELECTORS)
                state = await self._live_reads.read(
                    (pending.kinds, namespace), lambda: pending.fresher(pending.kinds, namespace), bounded=costly
                )
        except Exception as error:  # the API is slow or failing: answer from the cache, as before
            self.metrics.live_reads.labels(route.name, "failed").inc()
            logger.warning(
                "%s: uid=%s %s %s: reading %s live failed (%s); answering from the cache",
                route.name,
                uid_text(review.uid),
                review.operation,
                identity_text(review.namespace, review.name),
                ", ".join(sorted(pending.kinds)),
                "timed out" if isinstance(error, TimeoutError) else short_error(error),
            )
            return self._encoded(route, review, pending.decision)
        if state is LIMITED:  # more live reads asked for than the bucket allows: the cache decides
            self.metrics.live_reads.labels(route.name, "limited").inc()
            return self._encoded(route, review, pending.decision)
        if state is None:
            self.metrics.live_reads.labels(route.name, "same").inc()
            return self._encoded(route, review, pending.decision)
        self.metrics.live_reads.labels(route.name, "behind").inc()
        outcome = self._judged(route, review, state, recheck=False)
        assert not isinstance(outcome, _Recheck)
        return outcome

    def _encoded(self, route: Route, review: wire.Review, decision: Decision) -> tuple[str, web.Response]:
        answer = wire.from_decision(review.uid, decision, mutating=route.mutating)
        if not decision.allowed or decision.warnings:
            wire.scrub(answer, review.obj, review.old)
        stale = staleness(self.source)
        if stale:  # decided on data that is not fully current: every decided answer says so (our text: no scrub)
            answer["warnings"] = [*answer.get("warnings", ()), *stale]
        if not decision.allowed:
            if logger.isEnabledFor(logging.INFO):  # the denial's codes are only joined for the log
                denials = decision.denials
                codes = ", ".join(
                    f"{escaped(violation.code, 64)} {escaped(wire.shown_field(violation.field), 160)}"
                    for violation in denials[: wire.MAX_ANSWERED]
                )
                if len(denials) > wire.MAX_ANSWERED:
                    codes += f" and {len(denials) - wire.MAX_ANSWERED} more"
                logger.info(
                    "%s: uid=%s %s %s %s denied: %s",
                    route.name,
                    uid_text(review.uid),
                    review.operation,
                    review.kind,
                    identity_text(review.namespace, review.name),
                    codes or "no reason given",
                )
            return "denied", _review(answer)
        return ("patched" if "patch" in answer else "allowed"), _review(answer)

    def _check_headers(self, request: web.Request) -> web.Response | None:
        headers = request.headers
        content_type = headers.get("Content-Type")
        if content_type is not None and content_type != "application/json":  # the API server's exact value
            media = content_type.split(";", 1)[0].strip().lower()
            if media != "application/json" and not (media.startswith("application/") and media.endswith("+json")):
                return _error(415, "the request body must be application/json")
        encoding = headers.get("Content-Encoding")
        if encoding is not None and encoding.strip().lower() not in ("", "identity"):
            return _error(415, "compressed request bodies are not accepted")
        length = request.content_length
        if length is not None and length > self.settings.max_body:
            # closed: the unread body would otherwise be drained from a client we just refused
            return _error(413, f"the request body is larger than {self.settings.max_body} bytes", close=True)
        return None


class ByteBudget:
    """Bytes that may be taken at once; takers wait in order (one event loop, no locks)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.free = total
        self._waiting: collections.deque[tuple[int, asyncio.Future[None]]] = collections.deque()

    async def take(self, amount: int) -> int:
        """Wait until ``amount`` (at most the whole budget) is free, take it and return it."""
        amount = min(amount, self.total)
        if not self._waiting and self.free >= amount:
            self.free -= amount
            return amount
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (amount, waiter)
        self._waiting.append(entry)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.give(amount)  # granted just as it was cancelled: hand it on
            else:
                with contextlib.suppress(ValueError):
                    self._waiting.remove(entry)
                self._wake()
            raise
        return amount

    def give(self, amount: int) -> None:
        self.free += amount
        self._wake()

    def _wake(self) -> None:
        while self._waiting:
            amount, waiter = self._waiting[0]
            if waiter.done():  # cancelled while waiting: its taker removes nothing more
                self._waiting.popleft()
                continue
            if self.free < amount:
                break
            self._waiting.popleft()
            self.free -= amount
            waiter.set_result(None)


def _review(answer: Mapping[str, Any]) -> web.Response:
    return web.Response(body=wire.encode(answer), content_type="application/json")


def _error(status: int, message: str, *, close: bool = False) -> web.Response:
    response = web.json_response({"error": message, "code": status}, status=status)
    if close:  # the connection's state is unknown (body unread or partly read): do not reuse it
        response.force_close()
    return response
