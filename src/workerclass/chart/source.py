"""The chart in effect: which chart admission and the renderer follow, and its text when given.

Owns :class:`ChartSource`: the chart a State carries (``State.chart``; the CLI's ``--chart``, in a
cluster the chart the pools' releases point to). It is either the chart the shipped facts describe
(:meth:`ChartSource.shipped`: its identity, no files) or a chart whose files were given
(:meth:`ChartSource.from_files`): then known (its identity found by digest) or unknown. What the
port reads of the chart's own text (:meth:`ChartSource.text`) comes only from given files; asking
for it without them raises :class:`ChartTextMissing`, whose message says how to give the chart.

Its edge: pure values; the files are read by ``workerclass.adapters.chart``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .identity import ChartIdentity, ChartRules, chart_digest, chart_metadata, default_identity, identify

__all__ = ["GIVE_THE_CHART", "ChartSource", "ChartTextMissing"]

#: How a user gives the chart, for every message that needs it.
GIVE_THE_CHART = (
    "give the chart the cluster runs with --chart DIR|TGZ (a folder of Cozystack's kubernetes-nodes chart or its "
    "packaged .tgz)"
)


class ChartTextMissing(Exception):
    """An output needs the chart's own text, and only the shipped facts are at hand."""

    def __init__(self, what: str) -> None:
        self.what = what
        super().__init__(f"{what} needs the chart's own text, which the package does not ship: {GIVE_THE_CHART}")


@dataclass(frozen=True, eq=False)
class ChartSource:
    """The chart in effect.

    ``identity``: the known chart it is (None: files were given that match no known chart);
    ``digest`` and ``version``: of the given files, or the identity's; ``files``: the chart's files
    when given (None: no text); ``origin``: where it was read from, in words (``--chart PATH``, an
    artifact), for messages; ``assumed``: nobody said which chart the cluster runs, the shipped
    facts' chart stands in (rules that depend on the real chart, such as ``ChartNotGated``, are not
    applied); ``artifacts``: digests of packaged archives known to hold this chart (the ``.tgz`` it
    was read from, a Flux artifact verified against it), to tell which releases run it;
    ``probed_gate``: for a chart of no known identity, whether Helm's engine rendered no object for a
    pool that names a class (``True``: it carries a gate; ``None``: not probed); ``problem``: the chart
    the cluster runs could not be read or verified (:meth:`unverified`: the shipped facts stand in,
    and a pool may not select a class, since nothing says the chart would leave it alone).
    """

    identity: ChartIdentity | None
    digest: str
    version: str
    files: Mapping[str, bytes] | None = None
    origin: str = "the facts the package ships"
    assumed: bool = False
    artifacts: frozenset[str] = frozenset()
    #: Helm's own engine for a chart the port does not know (``workerclass.adapters.helm``): called
    #: as ``engine(values, release=..., namespace=...)`` with the values before the chart's defaults
    engine: Callable[..., list[dict[str, Any]]] | None = None
    probed_gate: bool | None = None
    problem: str = ""
    _texts: dict[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def shipped(cls) -> ChartSource:
        """The chart the shipped facts describe, without its text (assumed, not stated)."""
        return _SHIPPED

    @classmethod
    def unverified(cls, problem: str) -> ChartSource:
        """The chart the cluster runs is named but could not be read or verified (``problem``: why):
        the shipped facts' rules apply, and nothing may rely on the chart carrying our gate."""
        return cls(identity=None, digest="", version="", origin="the chart the cluster runs", problem=problem)

    @classmethod
    def from_files(
        cls,
        files: Mapping[str, bytes],
        *,
        origin: str = "",
        known: tuple[ChartIdentity, ...] | None = None,
        artifacts: frozenset[str] = frozenset(),
        engine: Callable[..., list[dict[str, Any]]] | None = None,
    ) -> ChartSource:
        """A given chart: identified by its digest (``known`` defaults to the known identities);
        ``artifacts``: the digests of packaged archives known to hold it."""
        identity = identify(files, known=known)
        version = chart_metadata(files.get("Chart.yaml", b"")).get("version")
        return cls(
            identity=identity,
            digest=identity.digest if identity is not None else chart_digest(files),
            version=str(version) if version is not None else "",
            files=MappingProxyType(dict(files)),
            origin=origin or "a given chart",
            artifacts=artifacts,
            engine=engine,
        )

    # ------------------------------------------------------------------ what it is

    @property
    def given(self) -> bool:
        """Whether the chart's own files are at hand (else only the shipped facts)."""
        return self.files is not None

    @property
    def known(self) -> bool:
        return self.identity is not None

    @property
    def name(self) -> str:
        return self.identity.name if self.identity is not None else "unknown"

    @property
    def upstream(self) -> str:
        """The upstream chart whose facts apply (an unknown chart: the shipped default's)."""
        return (self.identity or default_identity()).upstream

    @property
    def rules(self) -> ChartRules:
        """The rules the chart implies (an unknown chart: none beyond the shared facts)."""
        return self.identity.rules if self.identity is not None else ChartRules()

    @property
    def gated(self) -> bool:
        """Whether it renders nothing for a pool that names a class: a known identity with our gate,
        or a chart Helm's engine was seen to render nothing for such a pool (:attr:`probed_gate`)."""
        if self.identity is not None:
            return self.identity.gated
        return self.probed_gate is True

    def describe(self) -> str:
        """For people: the known chart, or the digest of an unknown one, and where it came from."""
        if self.problem:
            return f"the chart the cluster runs, not verified ({self.problem})"
        if self.identity is None:
            return f"an unknown chart ({self.origin}), version {self.version or '?'}, {self.digest}"
        return self.identity.describe() + ("" if self.given else " (its text not given)")

    def as_dict(self) -> dict[str, Any]:
        """``{"name", "source", "version", "digest", "gated", "text"}``: the contract's chart object."""
        return {
            "name": self.name,
            "source": self.identity.source if self.identity is not None else self.origin,
            "version": self.version,
            "digest": self.digest,
            "gated": self.gated,
            "text": self.given,
        }

    def same_chart(self, digest: str) -> bool:
        """Whether ``digest`` (a chart digest) is this chart's."""
        return digest == self.digest

    # ------------------------------------------------------------------ its text

    def text(self, path: str, *, what: str) -> str:
        """The chart's file ``path`` as text (cached); :class:`ChartTextMissing` (naming ``what``
        needs it) when only the shipped facts are at hand, KeyError when the chart has no such file."""
        if self.files is None:
            raise ChartTextMissing(what)
        cached = self._texts.get(path)
        if cached is None:
            cached = self._texts[path] = self.files[path].decode("utf-8")
        return cached

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ChartSource):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple[str, str, bool, bool, str, bool | None]:
        return self.digest, self.version, self.given, self.assumed, self.problem, self.probed_gate


def _shipped() -> ChartSource:
    identity = default_identity()
    return ChartSource(identity=identity, digest=identity.digest, version=identity.version, assumed=True)


_SHIPPED = _shipped()
