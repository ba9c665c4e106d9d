"""The router's reply read as a decision: which route a question takes, and why.

The router (:mod:`reasonloop.reasoning.steps.router`) asks the model for one JSON object,
``{"route": "multi_hop", "reason": "..."}``. Models write it fenced, after a sentence, with other
key names (``decision``, ``label``), with the label spelt differently (``multi-hop``, ``MULTI HOP``,
``no_retrieval``), or write the label alone; all of these are read. A reply with no readable
decision (prose, a refusal, an unknown label, broken JSON) gives ``None``: the caller falls back to
its rule and says so; nothing is guessed from prose.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from reasonloop.events import RouteName

__all__ = ["ROUTES", "RouteReply", "parse_route_reply", "route_name"]

ROUTES: tuple[RouteName, ...] = ("none", "single", "multi_hop", "research")
"""The routes, cheapest first."""

_ALIASES: dict[str, RouteName] = {
    "none": "none",
    "no": "none",
    "no_retrieval": "none",
    "no_search": "none",
    "direct": "none",
    "single": "single",
    "single_search": "single",
    "single_hop": "single",
    "one_search": "single",
    "search": "single",
    "multi_hop": "multi_hop",
    "multihop": "multi_hop",
    "multi": "multi_hop",
    "multi_step": "multi_hop",
    "multiple_hops": "multi_hop",
    "research": "research",
    "deep_research": "research",
}
_ROUTE_KEYS = ("route", "decision", "label", "choice", "hops", "answer")
_REASON_KEYS = ("reason", "why", "rationale", "explanation")
_MAX_OBJECTS = 16
"""``{`` positions tried per reply: enough for a real one, bounded for a hostile one."""
_BARE = re.compile(r"^\W*([A-Za-z][A-Za-z _-]{0,20}?)\W*$")


@dataclass(frozen=True, slots=True)
class RouteReply:
    route: RouteName
    reason: str = ""


def route_name(value: object) -> RouteName | None:
    """A label as one of :data:`ROUTES` (``"Multi-hop"`` → ``multi_hop``), or ``None``."""
    if not isinstance(value, str):
        return None
    key = re.sub(r"[\s-]+", "_", value.strip().lower())
    return _ALIASES.get(key)


def _from_object(value: object) -> RouteReply | None:
    if not isinstance(value, dict):
        return None
    for key in _ROUTE_KEYS:
        route = route_name(value.get(key))
        if route is not None:
            reason = next((value[k] for k in _REASON_KEYS if isinstance(value.get(k), str)), "")
            return RouteReply(route, " ".join(reason.split())[:300])
    return None


def parse_route_reply(text: str) -> RouteReply | None:
    """The first decision in ``text`` (see the module docstring), or ``None`` when it holds none."""
    decoder = json.JSONDecoder()
    start, tries = text.find("{"), 0
    while start >= 0 and tries < _MAX_OBJECTS:
        tries += 1
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        found = _from_object(value)
        if found is not None:
            return found
        start = text.find("{", end)
    bare = _BARE.match(text.replace("`", ""))
    if bare:
        route = route_name(bare.group(1))
        if route is not None:
            return RouteReply(route)
    return None
