"""Read STATE: folders, files and stdin of Kubernetes manifests (YAML or JSON, multi-document).

Its edge: bytes on disk in, plain dicts (with where they came from) out. Errors name the file
and the line, so a platform engineer can fix a GitOps repo quickly.

- Files ``.yaml``, ``.yml`` and ``.json`` in any letter case, at any depth; hidden folders
  (``.git``), paths matching an ``exclude`` glob and Helm chart folders (``Chart.yaml`` beside
  ``templates/``: templates, not manifests; warned) are skipped; symlinked folders are followed,
  each real folder once (loops end). A file named explicitly is read whatever its name.
- Every document carries its first line (a ``kind: List``'s members theirs), for messages and
  the CLI's FILE column.
- A file that cannot be read is an error naming file and line: raised, or (with an ``errors``
  list) appended to it while the rest is read.
- A document that is not a mapping (a list such as an Ansible playbook, a string, a number) is
  skipped with one warning naming file and document, never an abort.
- Documents are read as kubectl reads them (:mod:`workerclass.chart.kubeyaml`: go-yaml v2's
  resolution, then JSON): ``y`` is a boolean, ``1e2`` a number, ``1:30`` and dates are text.
- Duplicate keys in one mapping (as JSON holds them: ``on`` and ``true`` are one) are refused
  with file and line, as kubectl refuses them.
- A ``metadata.name`` or ``metadata.namespace`` that YAML reads as a boolean or a number
  (``name: yes``, ``name: 0123``) is refused with a message saying to quote it.
"""

from __future__ import annotations

import fnmatch
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ..admission.bounds import request_excess
from ..api.bounds import MAX_DEPTH
from ..api.resources import APPLICATION_DEFINITION, INSTANCETYPE, WORKER_CLASS, WORKER_PLATFORM
from ..chart.kubeyaml import PLAIN_TAG, STR_TAG, KubeLoader, json_key, plain_scalar
from ..state import Document, LoadError, State

__all__ = [
    "MANIFEST_SUFFIXES",
    "YAML_SUFFIXES",
    "Document",
    "LoadError",
    "excluded",
    "in_namespace",
    "is_helm_chart",
    "iter_manifest_files",
    "iter_yaml_files",
    "load_state",
    "parse_documents",
    "read_documents",
    "read_folder",
    "read_paths",
]

YAML_SUFFIXES = (".yaml", ".yml")
#: Suffixes read from folders, compared in lower case.
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"


#: Kinds without a namespace, which ``--namespace`` leaves alone (as kubectl's discovery says of
#: them): ours and the cluster-scoped kinds a GitOps folder holds beside them. Any other kind is
#: taken as namespaced, as kubectl takes the kinds it is asked to apply with ``-n``.
CLUSTER_SCOPED_KINDS = frozenset(
    {
        *(resource.kind for resource in (WORKER_CLASS, WORKER_PLATFORM, INSTANCETYPE, APPLICATION_DEFINITION)),
        "Namespace",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "CustomResourceDefinition",
        "ClusterRole",
        "ClusterRoleBinding",
        "StorageClass",
        "PersistentVolume",
        "PriorityClass",
        "APIService",
        "VirtualMachineClusterPreference",
    }
)


class _Loader(KubeLoader):
    """Kubernetes' reading of YAML (:class:`~workerclass.chart.kubeyaml.KubeLoader`), refusing
    duplicate keys and unquoted names kubectl does not read as strings (with their line)."""

    where = "<input>"

    def repeated_key(self, written: list[tuple[Node, Node]], key_node: Node, name: str) -> None:
        # A pair a merge key brought in and a written one with its key is no duplicate: only keys
        # written twice are. Rare, so the written pairs are read again here.
        lines = [k.start_mark.line + 1 for k, _ in written if isinstance(k, ScalarNode) and _key_text(k) == name]
        if len(lines) > 1:
            raise LoadError(
                f"{self.where}:{lines[1]}: duplicate key {name!r} (first at line {lines[0]}): "
                "kubectl refuses it; keep one"
            )

    def metadata_read(self, node: Node) -> None:
        if isinstance(node, MappingNode):
            _check_names(node, self.where)


def _key_text(node: ScalarNode) -> str | None:
    """A scalar key as JSON will hold it (``on`` and ``true`` are one key), or None when it has none."""
    if node.tag == PLAIN_TAG:
        try:
            return json_key(plain_scalar(node.value))
        except ValueError:
            return None
    return node.value if node.tag == STR_TAG else None


def _check_names(metadata: MappingNode, where: str) -> None:
    for key_node, value_node in metadata.value:
        if not isinstance(key_node, ScalarNode) or key_node.value not in ("name", "namespace"):
            continue
        if not isinstance(value_node, ScalarNode) or value_node.tag != PLAIN_TAG:
            continue  # quoted, a block scalar or tagged: a string (or refused by its tag)
        what = _describe(plain_scalar(value_node.value)) if value_node.value else "null"
        if what != "a string":
            line = value_node.start_mark.line + 1
            raise LoadError(
                f"{where}:{line}: metadata.{key_node.value} {value_node.value!r} is read by YAML as {what}, "
                f'not a name: quote it ({key_node.value}: "{value_node.value}")'
            )


def _describe(item: object) -> str:
    if item is None:
        return "null"
    if isinstance(item, list):
        return "a list"
    if isinstance(item, str):
        return "a string"
    if isinstance(item, bool):
        return "a boolean"
    if isinstance(item, int | float):
        return "a number"
    return type(item).__name__


def _member_lines(node: Node | None) -> list[int]:
    """The first line of each member of a ``kind: List`` document's ``items`` (from its node)."""
    if not isinstance(node, MappingNode):
        return []
    for key, value in node.value:
        if isinstance(key, ScalarNode) and key.value == "items" and isinstance(value, SequenceNode):
            return [member.start_mark.line + 1 for member in value.value]
    return []


def _documents(items: Iterator[tuple[Node | None, object]], where: str, warnings: list[str] | None) -> list[Document]:
    out: list[Document] = []
    for index, (node, item) in enumerate(items):
        if item is None:
            continue
        line = node.start_mark.line + 1 if node is not None else 1
        if isinstance(item, dict) and item.get("kind") == "List" and isinstance(item.get("items"), list):
            lines = _member_lines(node)
            for sub, member in enumerate(item["items"]):
                origin = f"{where}#{index + 1}.{sub + 1}"
                _append(out, member, origin, lines[sub] if sub < len(lines) else line, warnings)
            continue
        _append(out, item, f"{where}#{index + 1}", line, warnings)
    return out


def _append(out: list[Document], item: object, origin: str, line: int, warnings: list[str] | None) -> None:
    """A document that is a Kubernetes object (a mapping with a kind) is kept; any other is skipped
    with one warning ``FILE#N: ...`` (API.md section 4). Objects of kinds workerclass does not read
    are the State's to skip (and say so)."""
    if isinstance(item, dict) and isinstance(item.get("kind"), str) and item["kind"]:
        found = request_excess(item)
        if found is not None:  # read no further: a deeper walk would fail for the whole STATE
            raise LoadError(f"{origin.partition('#')[0]}:{line}: the {item['kind']} {found.message}")
        out.append(Document(item, origin, line))
    elif warnings is not None:
        what = "a mapping without kind" if isinstance(item, dict) else _describe(item)
        warnings.append(f"{origin}: {what}, not a Kubernetes object: skipped")


def _yaml_items(text: str, where: str) -> Iterator[tuple[Node | None, object]]:
    """Each document's node (for its lines) and its value."""
    loader = _Loader(text)
    loader.where = where
    try:
        while loader.check_node():
            node = loader.get_node()
            yield node, loader.construct_document(node)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise LoadError(f"{where}{line}: invalid YAML: {problem}") from None
    finally:
        loader.dispose()


def parse_documents(text: str, where: str, *, warnings: list[str] | None = None) -> list[Document]:
    """The non-empty documents of YAML (or JSON) text, in order.

    Documents that are not mappings are skipped; when ``warnings`` is given, one line per
    skipped document is appended to it. Raises :class:`LoadError` for syntax errors, duplicate
    keys and unquoted non-string names.
    """
    return _documents(_yaml_items(text, where), where, warnings)


def _json_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def parse_json(text: str, where: str, *, warnings: list[str] | None = None) -> list[Document]:
    """A JSON file: read as YAML (for line numbers), else by the JSON parser (tabs, ``\\/``)."""
    try:
        return parse_documents(text, where, warnings=warnings)
    except LoadError as error:
        if "invalid YAML" not in str(error):
            raise
    try:
        value = json.loads(text, object_pairs_hook=_json_pairs)
    except json.JSONDecodeError as error:
        raise LoadError(f"{where}:{error.lineno}: invalid JSON: {error.msg}") from None
    except ValueError as error:
        raise LoadError(f"{where}: invalid JSON: {error}: kubectl refuses it; keep one") from None
    return _documents(iter([(None, value)]), where, warnings)


def read_documents(path: Path, *, label: str | None = None, warnings: list[str] | None = None) -> list[Document]:
    """All non-empty documents of one file, in file order (JSON files by their suffix)."""
    where = label or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise LoadError(f"{where}: cannot read: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise LoadError(f"{where}: not UTF-8 text") from None
    try:
        if path.suffix.lower() == ".json":
            return parse_json(text, where, warnings=warnings)
        return parse_documents(text, where, warnings=warnings)
    except RecursionError:  # the YAML or JSON reader itself: an object nested beyond any bound
        raise LoadError(f"{where}: an object nests too deep to read (workerclass reads {MAX_DEPTH} levels)") from None


def is_helm_chart(folder: Path) -> bool:
    """A Helm chart's folder: ``Chart.yaml`` beside ``templates/`` (its templates are not manifests)."""
    return (folder / "Chart.yaml").is_file() and (folder / "templates").is_dir()


def excluded(path: Path, relative: str, exclude: Sequence[str]) -> bool:
    """Whether ``path`` matches one of the ``--exclude`` globs: by its path below the STATE root
    given (``vendor/*``, ``apps/*/secrets.yaml``) or by its name (``vendor``, ``*.enc.yaml``)."""
    return any(fnmatch.fnmatchcase(relative, glob) or fnmatch.fnmatchcase(path.name, glob) for glob in exclude)


def iter_manifest_files(
    root: Path,
    *,
    warnings: list[str] | None = None,
    exclude: Sequence[str] = (),
    errors: list[str] | None = None,
) -> Iterator[Path]:
    """Manifest files below ``root`` in a stable order.

    Hidden entries (``.git``) and entries matching an ``exclude`` glob are skipped; so is a Helm
    chart's folder (:func:`is_helm_chart`), with a warning. Symlinked folders are followed; a
    folder whose real path was already walked (a symlink loop, or two links to one folder) is
    walked once, and a loop is reported in ``warnings``. A folder that cannot be listed is an
    error: appended to ``errors`` when given (the walk goes on), else raised.
    """
    seen: set[tuple[int, int]] = set()

    def walk(folder: Path, ancestors: frozenset[tuple[int, int]]) -> Iterator[Path]:
        try:
            info = folder.stat()
        except OSError:
            return
        key = (info.st_dev, info.st_ino)
        if key in ancestors:
            if warnings is not None:
                warnings.append(f"{folder}: symbolic link loop: not followed")
            return
        if key in seen:
            return
        seen.add(key)
        if is_helm_chart(folder):
            if warnings is not None:
                warnings.append(
                    f"{folder}: a Helm chart (Chart.yaml beside templates/): skipped; render it (helm template) "
                    "to check what it makes"
                )
            return
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except OSError as error:
            message = f"{folder}: cannot read: {error.strerror or error}"
            if errors is None:
                raise LoadError(message) from None
            errors.append(message)
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = Path(entry.path)
            if exclude and excluded(path, path.relative_to(root).as_posix(), exclude):
                continue
            try:
                is_dir = entry.is_dir()  # follows symbolic links
                is_file = not is_dir and entry.is_file()
            except OSError:
                continue
            if is_dir:
                yield from walk(path, ancestors | {key})
            elif is_file and path.suffix.lower() in MANIFEST_SUFFIXES:
                yield path

    yield from walk(root, frozenset())


def iter_yaml_files(root: Path) -> Iterator[Path]:
    """The manifest files below ``root`` (kept for callers of the former name)."""
    return iter_manifest_files(root)


def read_folder(root: Path, *, warnings: list[str] | None = None) -> list[Document]:
    """The documents of a folder (any depth) or of one file."""
    return read_paths([str(root)], warnings=warnings)


def read_paths(
    paths: Sequence[str | Path],
    *,
    warnings: list[str] | None = None,
    stdin: IO[str] | None = None,
    errors: list[str] | None = None,
    exclude: Sequence[str] = (),
) -> list[Document]:
    """The documents of several folders, files and ``-`` (stdin), in the order given.

    A file reached twice (named twice, or through a symlinked folder) is read once. Skipped
    documents, Helm chart folders and symlink loops are appended to ``warnings`` when it is given.
    ``exclude``: globs of paths not to read (:func:`excluded`). ``errors``: when given, a path or
    file that cannot be read (missing, invalid YAML, a duplicate key, an unquoted name) is
    appended to it as one line with file and line, and the rest is read; without it, the first
    is raised as :class:`LoadError`.
    """
    documents: list[Document] = []
    read: set[str] = set()
    stdin_read = False

    def attempt(read_one: Callable[..., list[Document]], *args: Any) -> None:
        try:
            documents.extend(read_one(*args))
        except LoadError as error:
            if errors is None:
                raise
            errors.append(str(error))

    for entry in paths:
        if str(entry) == STDIN:
            if stdin_read:
                continue
            stdin_read = True
            stream = stdin if stdin is not None else sys.stdin
            attempt(_read_stream, stream, warnings)
            continue
        root = Path(entry)
        if not root.exists():
            attempt(_missing, root)
            continue
        if exclude and excluded(root, root.as_posix(), exclude):
            continue
        # Anything but a folder is read as a file: a pipe or a process substitution (``/dev/fd/N``) too.
        files = (
            iter_manifest_files(root, warnings=warnings, exclude=exclude, errors=errors) if root.is_dir() else [root]
        )
        for path in files:
            real = os.path.realpath(path)
            if real in read:
                continue
            read.add(real)
            attempt(_read_file, path, warnings)
    return documents


def _missing(root: Path) -> list[Document]:
    raise LoadError(f"{root}: no such file or folder")


def _read_file(path: Path, warnings: list[str] | None) -> list[Document]:
    return read_documents(path, warnings=warnings)


def _read_stream(stream: IO[str], warnings: list[str] | None) -> list[Document]:
    return parse_documents(stream.read(), "<stdin>", warnings=warnings)


def in_namespace(documents: list[Document], namespace: str, errors: list[str] | None = None) -> list[Document]:
    """``documents`` as ``kubectl -n NAMESPACE`` reads them: a namespaced object without a namespace
    gets ``namespace``; one with another namespace is an error naming it and its file (appended to
    ``errors`` when given and left out, else raised), as kubectl refuses to move it."""
    out: list[Document] = []
    for document in documents:
        obj = document.obj
        metadata = obj.get("metadata")
        if obj.get("kind") in CLUSTER_SCOPED_KINDS or (metadata is not None and not isinstance(metadata, dict)):
            out.append(document)
            continue
        own = metadata.get("namespace") if metadata else None
        if own in (None, ""):
            obj = {**obj, "metadata": {**(metadata or {}), "namespace": namespace}}
            out.append(Document(obj, document.origin, document.line))
        elif own != namespace:
            message = (
                f"{document.where}: the namespace of the {obj.get('kind')} ({own!r}) is not --namespace's "
                f"({namespace!r}): kubectl refuses it; pass --namespace={own} or change the document"
            )
            if errors is None:
                raise LoadError(message)
            errors.append(message)
        else:
            out.append(document)
    return out


def load_state(
    path_or_paths: str | Path | Sequence[str | Path],
    *,
    stdin: IO[str] | None = None,
    errors: list[str] | None = None,
    exclude: Sequence[str] = (),
    namespace: str | None = None,
) -> State:
    """Build a state from STATE: a folder or file, or several of them (``-`` reads stdin).

    The paths are read as :func:`read_paths` reads them (in the order given, a file reached twice
    read once, ``exclude`` globs and Helm chart folders skipped); what the loader skipped
    (documents that are not Kubernetes objects, charts, symlink loops) comes first in the state's
    warnings, then what indexing skipped. Without ``errors`` the first thing that cannot be read
    (a file, a duplicate identity) raises :class:`LoadError`; with it, each is appended to it as a
    line naming file and line, and the State holds the rest. ``namespace``: :func:`in_namespace`.
    """
    paths = [path_or_paths] if isinstance(path_or_paths, str | Path) else list(path_or_paths)
    read_warnings: list[str] = []
    documents = read_paths(paths, warnings=read_warnings, stdin=stdin, errors=errors, exclude=exclude)
    if namespace:
        documents = in_namespace(documents, namespace, errors)
    return State.from_documents(documents, warnings=read_warnings, errors=errors)
