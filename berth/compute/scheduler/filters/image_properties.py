"""ImagePropertiesFilter: the host's hypervisor must run what the image asks for.

Image properties (older names in brackets)::

    hw_architecture (architecture)                 x86_64, aarch64, ...
    img_hv_type (hypervisor_type)                  kvm, qemu, ...
    hw_vm_mode (vm_mode)                           hvm, ...
    img_hv_requested_version                       ">=8.0", "<10", "==9.1" (bare: ==)
        (hypervisor_version_requires)

One of the host's supported instances (architecture, hypervisor type, VM mode) must match every
one of the first three that the image sets. The reason names the first requirement that no
supported instance meets, narrowing in that order:

    arch-unsupported                  no supported instance has the architecture
    hypervisor-type-unsupported       none has it with the hypervisor type
    vm-mode-unsupported               none has both with the VM mode
    hypervisor-version-unsupported    the hypervisor version does not meet the requirement
                                      (or the requirement cannot be read)
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from typing import Final

from berth.compute.objects.request_spec import RequestSpec
from berth.compute.scheduler.candidates import Candidate
from berth.compute.scheduler.filters.base import HostFilter
from berth.compute.scheduler.host_state import HostState

ARCH_UNSUPPORTED: Final = "arch-unsupported"
HV_TYPE_UNSUPPORTED: Final = "hypervisor-type-unsupported"
VM_MODE_UNSUPPORTED: Final = "vm-mode-unsupported"
HV_VERSION_UNSUPPORTED: Final = "hypervisor-version-unsupported"

_ARCH_ALIASES: Final = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}
_OPERATORS: Final[Mapping[str, Callable[[tuple[int, ...], tuple[int, ...]], bool]]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    "<": operator.lt,
}
_REQUIREMENT: Final = re.compile(r"\s*(>=|<=|==|!=|>|<)?\s*(\d+(?:\.\d+)*)\s*")


def _prop(props: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        if props.get(name):
            return props[name].strip().lower()
    return None


def _arch(value: str) -> str:
    return _ARCH_ALIASES.get(value, value)


def version_meets(version: tuple[int, ...], requirement: str) -> bool:
    """Whether a dotted version meets ``[op]X.Y.Z``; an unreadable requirement never does."""
    match = _REQUIREMENT.fullmatch(requirement)
    if not match or not version:
        return False
    op = _OPERATORS[match.group(1) or "=="]
    wanted = tuple(int(p) for p in match.group(2).split("."))
    width = max(len(version), len(wanted))
    pad = (0,) * width
    return op((version + pad)[:width], (wanted + pad)[:width])


class ImagePropertiesFilter(HostFilter):
    NAME = "ImagePropertiesFilter"
    REASONS = frozenset(
        {ARCH_UNSUPPORTED, HV_TYPE_UNSUPPORTED, VM_MODE_UNSUPPORTED, HV_VERSION_UNSUPPORTED}
    )

    def passes_every_host(self, spec: RequestSpec) -> bool:
        props = spec.image.properties
        return (
            _prop(props, "hw_architecture", "architecture") is None
            and _prop(props, "img_hv_type", "hypervisor_type") is None
            and _prop(props, "hw_vm_mode", "vm_mode") is None
            and not _prop(props, "img_hv_requested_version", "hypervisor_version_requires")
        )

    def check(self, host: HostState, spec: RequestSpec, candidate: Candidate) -> str | None:
        props = spec.image.properties
        arch = _prop(props, "hw_architecture", "architecture")
        hv_type = _prop(props, "img_hv_type", "hypervisor_type")
        vm_mode = _prop(props, "hw_vm_mode", "vm_mode")
        supported = [
            (_arch(a.lower()), h.lower(), m.lower()) for a, h, m in host.supported_instances
        ]
        steps = (
            (arch, 0, ARCH_UNSUPPORTED),
            (hv_type, 1, HV_TYPE_UNSUPPORTED),
            (vm_mode, 2, VM_MODE_UNSUPPORTED),
        )
        for wanted, position, reason in steps:
            if wanted is None:
                continue
            value = _arch(wanted) if position == 0 else wanted
            supported = [s for s in supported if s[position] == value]
            if not supported:
                return reason
        requirement = _prop(props, "img_hv_requested_version", "hypervisor_version_requires")
        if requirement and not version_meets(host.hypervisor_version, requirement):
            return HV_VERSION_UNSUPPORTED
        return None
