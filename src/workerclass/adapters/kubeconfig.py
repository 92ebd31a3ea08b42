"""Where the command line connects to a cluster: a kubeconfig file, ``KUBECONFIG``, the in-cluster
service account, and the one-line errors when none of them works.

Its edge: files and the environment in, a :class:`Target` (a lightkube ``SingleConfig`` and how to
name it) and a ``lightkube.Client`` out. Every failure is a :class:`LiveError`: one line that never
quotes a kubeconfig's text or a server's URL (a kubeconfig may hold tokens, a URL ``user:password@``).
``preflight --live`` and ``serve`` connect through it; :mod:`.live` reads the install with the client.

lightkube is imported lazily (it comes with the ``controller`` extra).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .kube import short_error

__all__ = [
    "DEFAULT_KUBECONFIG",
    "SERVICE_ACCOUNT",
    "LiveError",
    "Target",
    "kube_client",
    "load_kubeconfig",
    "no_configuration",
]

#: the in-cluster service account's files (lightkube's default)
SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
DEFAULT_KUBECONFIG = "~/.kube/config"


class LiveError(Exception):
    """The cluster cannot be read at all: one line, without the server's message or URL."""


@dataclass(frozen=True, slots=True)
class Target:
    """A lightkube ``SingleConfig`` and how to name it in a message (``context NAME``, in-cluster)."""

    config: Any
    label: str


def _read_kubeconfig(path: Path) -> Any:
    from lightkube import KubeConfig

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise LiveError(f"{path}: no such kubeconfig file") from None
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or type(error).__name__
        raise LiveError(f"{path}: cannot read the kubeconfig ({reason})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:  # its text may quote the file, tokens included
        raise LiveError(f"{path}: not a kubeconfig (invalid YAML)") from None
    if not isinstance(data, dict):
        raise LiveError(f"{path}: not a kubeconfig (not a mapping)")
    try:
        return KubeConfig.from_dict(data, fname=path)
    except Exception as error:
        raise LiveError(f"{path}: not a kubeconfig ({type(error).__name__})") from None


def _in_cluster() -> Target | None:
    from lightkube import KubeConfig

    try:
        config = KubeConfig.from_service_account(SERVICE_ACCOUNT)
        return Target(config.get(), "the in-cluster service account")
    except Exception:  # not in a cluster (no token, no KUBERNETES_SERVICE_HOST)
        return None


def no_configuration() -> str | None:
    """When no source of a configuration is there at all, the error naming each source tried and
    why it gave none (in-cluster, ``KUBECONFIG``, ``~/.kube/config``, in lightkube's order);
    ``None`` when one is there to read (which may still fail, with its own error)."""
    host = os.environ.get("KUBERNETES_SERVICE_HOST")
    token = Path(SERVICE_ACCOUNT) / "token"
    if host and token.is_file():
        return None
    in_cluster = "KUBERNETES_SERVICE_HOST is unset" if not host else f"no token at {token}"
    listed = [part for part in os.environ.get("KUBECONFIG", "").split(os.pathsep) if part]
    if listed:
        if any(Path(part).expanduser().is_file() for part in listed):
            return None
        files = f"KUBECONFIG ({', '.join(listed)}: no such file)"
    else:
        if Path(DEFAULT_KUBECONFIG).expanduser().is_file():
            return None
        files = f"KUBECONFIG (unset), then {DEFAULT_KUBECONFIG} (no such file)"
    return (
        f"no Kubernetes configuration: tried the in-cluster service account ({in_cluster}), {files}; "
        "give --kubeconfig FILE"
    )


def load_kubeconfig(kubeconfig: str | Path | None = None, context: str | None = None) -> Target:
    """The API server and credentials to read with.

    ``kubeconfig``: that file. Without it: the in-cluster service account (unless ``context`` is
    given: contexts live in files), then the files of ``KUBECONFIG`` (several, separated as
    ``PATH`` is: the first that defines the context is used, without merging), then
    ``~/.kube/config``. ``context``: that context, else the file's ``current-context``. A context
    without a user reads anonymously (a ``kubectl proxy``). Raises :class:`LiveError`.
    """
    try:
        import lightkube  # noqa: F401
    except ImportError:
        raise LiveError("reading the cluster needs lightkube: install workerclass[controller]") from None
    if kubeconfig is not None:
        files, label = [Path(kubeconfig).expanduser()], str(kubeconfig)
    else:
        if context is None and (target := _in_cluster()) is not None:
            return target
        listed = os.environ.get("KUBECONFIG", "")
        files = [Path(part).expanduser() for part in listed.split(os.pathsep) if part]
        label = f"KUBECONFIG ({listed})" if files else DEFAULT_KUBECONFIG
        files = files or [Path(DEFAULT_KUBECONFIG).expanduser()]
        present = [path for path in files if path.is_file()]
        if not present:
            raise LiveError(
                no_configuration()
                or f"no Kubernetes configuration: not in a cluster, and no kubeconfig file at {label}; "
                "give --kubeconfig FILE"
            )
        files = present
    configs = [(path, _read_kubeconfig(path)) for path in files]
    name = context or next((config.current_context for _, config in configs if config.current_context), None)
    if name is None:
        raise LiveError(f"{label} sets no current-context: give --context NAME")
    for path, config in configs:
        if name in config.contexts:
            return Target(_single(config, name, path), f"context {name}")
    known = sorted({context_name for _, config in configs for context_name in config.contexts})
    raise LiveError(f"no context {name!r} in {label} (it has: {', '.join(known) or 'none'})")


def _single(config: Any, name: str, path: Path) -> Any:
    from lightkube.config.kubeconfig import SingleConfig
    from lightkube.config.models import User

    context = config.contexts[name]
    if context.cluster not in config.clusters:
        raise LiveError(f"context {name} of {path} names cluster {context.cluster!r}, which the file does not define")
    if context.user and context.user not in config.users:
        raise LiveError(f"context {name} of {path} names user {context.user!r}, which the file does not define")
    return SingleConfig(
        context_name=name,
        context=context,
        cluster=config.clusters[context.cluster],
        user=config.users[context.user] if context.user else User(),
        fname=config.fname,
    )


def kube_client(target: Target) -> Any:
    """A ``lightkube.Client`` for ``target``. Raises :class:`LiveError` (a certificate file the
    kubeconfig names is missing, its data is not PEM, ...)."""
    from lightkube import Client

    try:
        return Client(config=target.config)
    except OSError as error:
        where = f" {error.filename}" if getattr(error, "filename", None) else ""
        raise LiveError(f"{target.label}: cannot read a file it names{where} ({error.strerror or 'error'})") from None
    except Exception as error:
        raise LiveError(f"{target.label}: cannot make a client ({short_error(error)})") from None
