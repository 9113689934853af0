"""Consumer groups, classic and KIP-848, as Kafka 4.x's group coordinator.

The broker touches only ``GroupCoordinatorService`` (``service.py``).  Inside:
``registry.py`` (the groups and where each is coordinated),
``classic_coordinator.py`` (the classic protocol) with ``classic_group.py`` (the
classic group) and ``delayed.py`` (its delayed operations),
``consumer_coordinator.py`` (KIP-848) with ``consumer_group.py`` (the consumer
group) and ``assignors.py``, ``offsets.py`` (committed offsets) and ``group.py``
(the ``Group`` protocol both group types implement); what the package reads of
the cluster is ``mockbroker/state/cluster_view.py``.
"""

from .group import Group, GroupType
from .service import GroupCoordinatorService

__all__ = ["Group", "GroupCoordinatorService", "GroupType"]
