"""Rules about objects and their changes, each written once, below admission, plan and the controller.

- :mod:`.family`: the bootstrap family of a class or a pool (classless pools are Talos):
  ``class_family``, ``family_of`` (``None`` when unknown), ``assumed_family`` (unknown is Talos).
- :mod:`.usage`: a WorkerClass in use by live pools, and why it must be retained (``ClassInUse``,
  the controller's finalizer).
- :mod:`.classes`: a WorkerClass on its own and its changes: the built-in names bound to their
  family (``BUILTIN_FAMILIES``), the spec rules (private keys, ``TalosSettingOnKairos``, a fixed
  image is Kairos-only, complete and pinned, one osImage source), what a spec change is
  (``spec_changed``) and ``ClassImmutable``, a class being deleted, and image references
  (``reference_problem``, the platform's images too).
- :mod:`.pools`: a pool's change: the family switch (``BootstrapFamilyChange``) and the move to
  another parent cluster; how those messages quote a name (``shown_name``).
- :mod:`.keys`: SSH public keys and private key material in values.
- :mod:`.supplied`: what the tenant supplied in a KubernetesNodes UPDATE and what Cozystack's API
  filled in (the chart's schema defaults; a stored Kairos pool's Talos-only defaults,
  ``kairos_read_paths``), and stripping those paths.

Admission applies these rules to one request; ``plan`` asks admission (never these rules
directly) what a change would be refused for, and reads ``spec_changed`` only to choose which class
changes to send; the controller and ``status`` read the same rules.
Rules that need the resolved settings of a pool (a baseline against the platform, disk and
installer agreement) are resolution's (:mod:`workerclass.resolve`). Its edge: a State and plain
values in, violations and plain values out.
"""

from .classes import (
    BUILTIN_FAMILIES,
    class_being_deleted,
    class_immutable,
    class_spec_violations,
    reference_problem,
    spec_changed,
)
from .family import assumed_family, class_family, family_of
from .pools import cluster_move, family_switch, shown_name
from .usage import LIST_POOLS, SHOWN_POOLS, counted, deletion_blocker, in_use_message, pool_list, selecting

__all__ = [
    "BUILTIN_FAMILIES",
    "LIST_POOLS",
    "SHOWN_POOLS",
    "assumed_family",
    "class_being_deleted",
    "class_family",
    "class_immutable",
    "class_spec_violations",
    "cluster_move",
    "counted",
    "deletion_blocker",
    "family_of",
    "family_switch",
    "in_use_message",
    "pool_list",
    "reference_problem",
    "selecting",
    "shown_name",
    "spec_changed",
]
