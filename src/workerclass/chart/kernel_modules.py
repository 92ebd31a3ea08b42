"""What PR 3571 and PR 3294 put into the talos-reconcile Job's heredoc: kernel modules and the
installer image, and the one character rule both pass.

Owns PR 3571's three-state ``kernelModules`` (:func:`pr3571_kernel_modules`, with
:data:`NVIDIA_KERNEL_MODULES` for an ``nvidia.com/*`` GPU pool), the module list the Job renders
(:func:`kernel_modules_list`, rebuilt from validated names and parameters), the installer image
override (:func:`heredoc_installer_image`), and the patterns they are checked with:
:data:`KERNEL_MODULE_NAME` and :data:`SHELL_SAFE` (PR 3571's schematicID denylist: what a shell
heredoc carries literally). The same rules two ways: :func:`kernel_module_failures` reports them
as admission failures (:mod:`.checks` and :mod:`.render` call it before rendering), the
renderers raise when a caller renders past them. Its edge: values in, values out; the Job's text is
:mod:`.talos_job_spec`'s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..violations import Violation
from .quantity import go_quote_text, go_str, truthy

__all__ = [
    "KERNEL_MODULE_NAME",
    "NVIDIA_KERNEL_MODULES",
    "SHELL_SAFE",
    "InvalidInstallerImage",
    "InvalidKernelModule",
    "heredoc_installer_image",
    "kernel_module_failures",
    "kernel_modules_list",
    "pr3571_kernel_modules",
    "shell_escape",
]

#: PR 3571's kernel module name rule.
KERNEL_MODULE_NAME = re.compile(r"[a-z0-9_-]+")
#: ``^[^[:cntrl:]\\s$\\x60\\\\'\\"]+$`` in RE2: no control characters, whitespace, $, `, \\, quotes.
SHELL_SAFE = re.compile(r"[^\x00-\x1f\x7f\t\n\f\r $`\\'\"]+")

#: PR 3571's automatic set for a pool with an ``nvidia.com/*`` GPU and no ``kernelModules``.
NVIDIA_KERNEL_MODULES: tuple[dict[str, Any], ...] = (
    {"name": "nvidia", "parameters": ["NVreg_NvLinkDisable=1"]},
    {"name": "nvidia_uvm"},
    {"name": "nvidia_drm"},
    {"name": "nvidia_modeset"},
)


class InvalidKernelModule(ValueError):
    """PR 3571's ``invalid kernelModules name/parameter`` refusal (admission code InvalidKernelModule)."""


class InvalidInstallerImage(ValueError):
    """An installer image the heredoc cannot carry (PR 3571's schematicID denylist, applied to it)."""


def shell_escape(text: str) -> str:
    """``replace "\\\\" "\\\\\\\\" | replace "$" "\\\\$" | replace "`" "\\\\`"``: literal inside an unquoted heredoc."""
    return text.replace("\\", "\\\\").replace("$", "\\$").replace("`", "\\`")


def heredoc_installer_image(image: str, group_name: str) -> str:
    """An installer image override (PR 3294) as the heredoc carries it, or :class:`InvalidInstallerImage`."""
    if not SHELL_SAFE.fullmatch(image):
        raise InvalidInstallerImage(
            f"pool {group_name}: invalid installer image {go_quote_text(image)} — must not contain $, a backtick,"
            " a backslash, quotes or whitespace (it is interpolated into a machine config applied through a"
            " shell heredoc)"
        )
    return shell_escape(image)


def pr3571_kernel_modules(values: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """PR 3571's three-state ``kernelModules``: a list sets it, ``[]`` opts out (None), unset lets
    an ``nvidia.com/*`` GPU pool get :data:`NVIDIA_KERNEL_MODULES` (else None)."""
    modules = values.get("kernelModules")
    if isinstance(modules, list):
        return [dict(m) if isinstance(m, Mapping) else {} for m in modules] or None
    gpus = values.get("gpus")
    for gpu in gpus if isinstance(gpus, list) else []:
        name = gpu.get("name") if isinstance(gpu, Mapping) else None
        if isinstance(name, str) and name.startswith("nvidia.com/"):
            return [dict(m) for m in NVIDIA_KERNEL_MODULES]
    return None


def kernel_modules_list(modules: Sequence[Mapping[str, Any]], group_name: str) -> list[dict[str, Any]]:
    """``kubernetes.kernelModules`` for an explicit list: rebuilt from validated name and parameters."""
    out: list[dict[str, Any]] = []
    for module in modules:
        raw_name = module.get("name")
        name = go_str(raw_name) if truthy(raw_name) else ""
        if not KERNEL_MODULE_NAME.fullmatch(name):
            raise InvalidKernelModule(
                f"pool {group_name}: invalid kernelModules name {go_quote_text(name)} — must be a kernel module name "
                "matching ^[a-z0-9_-]+$ (e.g. nvidia_uvm)"
            )
        raw_params = module.get("parameters")
        params: list[str] = []
        for raw in raw_params if truthy(raw_params) and isinstance(raw_params, list) else []:
            param = go_str(raw)
            if not SHELL_SAFE.fullmatch(param):
                raise InvalidKernelModule(
                    f"pool {group_name}: invalid kernelModules parameter {go_quote_text(param)} on module "
                    f"{go_quote_text(name)} — must not contain $, a backtick, a backslash, quotes or whitespace (e.g. "
                    "NVreg_EnableGpuFirmware=1, or the semicolon-separated "
                    "NVreg_RegistryDwords=PowerMizerEnable=0x1;PerfLevelSrc=0x2222)"
                )
            params.append(param)
        entry: dict[str, Any] = {"name": name}
        if params:
            entry["parameters"] = params
        out.append(entry)
    return out


def kernel_module_failures(
    modules: Sequence[Any], *, pool: str = "(pool)", field: str = "spec.kernelModules"
) -> list[Violation]:
    """PR 3571's ``kubernetes.kernelModules`` guards on a module list (names ``^[a-z0-9_-]+$``;
    parameters free of shell and YAML metacharacters: they reach the Job's heredoc)."""
    failures: list[Violation] = []
    for i, module in enumerate(modules):
        if not isinstance(module, Mapping):
            continue
        raw_name = module.get("name")
        name = go_str(raw_name) if truthy(raw_name) else ""
        if not KERNEL_MODULE_NAME.fullmatch(name):
            failures.append(
                Violation(
                    "InvalidKernelModule",
                    f"{field}[{i}].name",
                    f"pool {pool}: invalid kernelModules name: must be a kernel module name matching "
                    "^[a-z0-9_-]+$ (e.g. nvidia_uvm)",
                )
            )
        params = module.get("parameters")
        for j, param in enumerate(params if isinstance(params, list) else []):
            if not SHELL_SAFE.fullmatch(go_str(param)):
                failures.append(
                    Violation(
                        "InvalidKernelModule",
                        f"{field}[{i}].parameters[{j}]",
                        f"pool {pool}: invalid kernelModules parameter: must not contain $, a backtick, a backslash, "
                        "quotes, whitespace or control characters (e.g. NVreg_EnableGpuFirmware=1)",
                    )
                )
    return failures
