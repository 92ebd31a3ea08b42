"""Rendered manifests as text: YAML documents or one JSON list, keys sorted, byte-stable.

Pure string formatting (no files, no terminal); the CLI and the golden tests share it so that
what a test pins is exactly what ``workerclass render`` prints.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import yaml

__all__ = ["manifests_json", "manifests_yaml"]


class _Dumper(yaml.SafeDumper):
    """Block style, multi-line strings (PEM certificates) as literal blocks, no aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def manifests_yaml(manifests: Iterable[dict[str, Any]]) -> str:
    """``---``-separated YAML documents with sorted keys."""
    return yaml.dump_all(
        list(manifests),
        Dumper=_Dumper,
        sort_keys=True,
        default_flow_style=False,
        explicit_start=True,
        allow_unicode=True,
        width=4096,
    )


def manifests_json(document: Any) -> str:
    """Indented JSON with sorted keys and a final newline."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
