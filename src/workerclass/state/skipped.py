"""What indexing a STATE skips, said in one line each (or one line per kind, counted).

Its edge: documents in, lines of text out; it decides nothing about the State. Every object
skipped is said: a document without a kind, an object of a kind workerclass does not read (counted
per kind with the first file and line; a near miss of a kind it reads, such as ``KubernetesNode``,
on its own line with "did you mean"), a HelmRelease that is not a pool's (one named like a pool's
release but lacking the label, on its own line), an object whose apiVersion is not its kind's
group. Values read from files are shown as they are only when short and printable (never a
Python repr such as ``None``). A duplicate identity or a nameless object is an error, not a
warning (:meth:`Skipped.refuse`).
"""

from __future__ import annotations

import difflib

from ..api.resources import RELEASE_PREFIX
from .kinds import APPLICATION_KIND_LABEL, INSTANCETYPE_KIND, KINDS
from .records import Document, LoadError

__all__ = ["Skipped", "meant_kind", "shown_value"]

#: the kinds a near miss is compared with (lower case -> as written)
_READ_KINDS = {kind.lower(): kind for kind in (*KINDS, INSTANCETYPE_KIND)}


def meant_kind(kind: str) -> str | None:
    """The kind read that ``kind`` is a near miss of (a letter off, another case), else ``None``."""
    close = difflib.get_close_matches(kind.lower(), list(_READ_KINDS), n=1, cutoff=0.8)
    return _READ_KINDS[close[0]] if close else None


def shown_value(value: object) -> str:
    """A value read from a file, in a message: a short printable string as it is, else its type."""
    if isinstance(value, str):
        return value if len(value) <= 80 and value.isprintable() else f"{value[:80]!r}..."
    return f"of type {type(value).__name__}"


def _shown(namespace: str, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name or "?"


class Skipped:
    """The lines for what one indexing skips; objects of the same kind and reason counted together."""

    def __init__(self, errors: list[str] | None = None) -> None:
        #: (kind, why) -> [how many, where the first was]
        self._counts: dict[tuple[str, str], list[int | str]] = {}
        self._errors = errors

    def refuse(self, message: str) -> None:
        """An object that cannot be indexed (a duplicate identity, no name): appended to the errors
        list given (``...: skipped``), else raised as :class:`LoadError`."""
        if self._errors is None:
            raise LoadError(message)
        self._errors.append(f"{message}: skipped")

    def _count(self, kind: str, why: str, document: Document) -> None:
        entry = self._counts.setdefault((kind, why), [0, document.where])
        entry[0] = int(entry[0]) + 1

    def kind_not_read(self, document: Document, kind: str, namespace: str, name: str) -> list[str]:
        """The lines to say now for an object of a kind not read (its count is said by :meth:`counted`)."""
        if not kind:
            return [f"{document.origin}: a mapping without kind, not a Kubernetes object: skipped"]
        meant = meant_kind(kind)
        if meant is not None:
            return [
                f"{document.where}: skipped {kind} {_shown(namespace, name)}: workerclass does not read kind "
                f"{kind}; did you mean {meant}?"
            ]
        self._count(kind, "workerclass does not read this kind", document)
        return []

    def release_not_a_pool(self, document: Document, namespace: str, name: str) -> list[str]:
        """A HelmRelease without the pool label: said now when its name is a pool release's."""
        if name.startswith(RELEASE_PREFIX):
            return [
                f"{document.where}: skipped HelmRelease {_shown(namespace, name)}: named like a pool's release but "
                f"without the label {APPLICATION_KIND_LABEL}: KubernetesNodes, so not read as a pool"
            ]
        self._count("HelmRelease", "not a KubernetesNodes pool's release", document)
        return []

    def api_version_not_in_group(self, document: Document, kind: str, namespace: str, name: str, group: str) -> str:
        api_version = document.obj.get("apiVersion")
        version = "absent" if api_version is None else shown_value(api_version)
        return f"{document.where}: skipped {kind} {_shown(namespace, name)}: apiVersion {version} is not in {group}"

    def counted(self) -> list[str]:
        """One line per kind and reason counted: how many, and where the first was."""
        return [
            f"skipped {count} {kind} object{'' if count == 1 else 's'} (first at {first}): {why}"
            for (kind, why), (count, first) in self._counts.items()
        ]
