"""Pure analyses over States, above admission (they ask it what it would refuse) and below the doors.

Modules:

- :mod:`.plan` (a package): what a change from one State to another does to each pool's
  machines (replace, new machines only, in place), and what admission or the Talos provider would refuse.
- :mod:`.pool_rbac`: what the worker controller must hold to apply the RBAC the chart renders for
  a pool (the API server's escalation check, with neither ``escalate`` nor ``bind`` granted).
- :mod:`.providers`: the one switch between a Kairos pool's bootstrap paths (the provider's
  template where it takes kubeadm, else a data Secret), for the worker controller, ``render`` and
  ``preflight``.
- :mod:`.restore`: the legacy-layout values of classified Talos pools, with the template-hash
  proof that the classless render gives the same machines.
- :mod:`.preflight` (a package): whether the installed webhooks are safe to rely on (matching,
  failure policy, readiness), checked against :data:`workerclass.api.webhooks.WEBHOOKS`.
- :mod:`.charts`: which chart each pool's release runs, as STATE shows it, against the chart
  emulated (plan, restore and preflight use it).
- :mod:`.status`: a WorkerClass's status conditions and whether its deletion must wait (the
  controller's core).
- :mod:`.uninstall`: what removing the package would leave (``preflight --uninstall``): Kairos
  pools an old chart would render as Talos, custom classes held by the finalizer, the objects the
  controller owns or pinned.
- :mod:`.workers`: what the worker controller applies for each classified pool (rendered, marked
  as ours, owned by the pool's HelmRelease), and which pools' Helm-made objects it pins for a handoff.
- :mod:`.convergence`: when an object must be applied: absent, changed since the last apply, or
  live with another field set under our field manager (``managedFields``) or another value.
- :mod:`.writes`: the worker controller's writes as data: a pool's applies and prunes, the pins
  of a handoff, what gone pools left behind, and the Events that report each pool.

Each takes States (or plain objects) and returns values; none does I/O.
"""

from __future__ import annotations

from .plan import REBUILD_ONLY, Plan, PlanRow, plan

__all__ = ["REBUILD_ONLY", "Plan", "PlanRow", "plan"]
