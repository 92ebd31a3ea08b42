"""Rules about objects and their changes, each written once, below admission, plan and the controller.

- :mod:`.family`: the bootstrap family of a class or a pool (classless pools are Talos).
- :mod:`.usage`: a WorkerClass in use by live pools, and why it must be retained.

Admission applies these rules to one request; ``plan`` asks admission (never these rules
directly) what a change would be refused for; the controller and ``status`` read the same rules.
Rules that need the resolved settings of a pool (a baseline against the platform, disk and
installer agreement) are resolution's (:mod:`workerclass.resolve`). Its edge: a State and plain
values in, violations and plain values out.
"""

from .family import assumed_family, class_family, family_of
from .usage import SHOWN_POOLS, deletion_blocker, in_use_message, pool_list, selecting

__all__ = [
    "SHOWN_POOLS",
    "assumed_family",
    "class_family",
    "deletion_blocker",
    "family_of",
    "in_use_message",
    "pool_list",
    "selecting",
]
