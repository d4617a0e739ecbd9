"""What a route prepares once per call: :func:`prepared` keeps it in the call's
:class:`~riskengine.protocol.Plan` (its ``prepared`` dict), so ``applies``, ``estimate`` and
``run`` share one preparation and nothing outlives the call or is shared between threads
(no cache on a route instance)."""

from __future__ import annotations

__all__ = ["prepared"]


def prepared(plan, key, make):
    """``make()`` once per call and ``key``; later asks get the same object."""
    cache = plan.prepared
    if key not in cache:
        cache[key] = make()
    return cache[key]
