"""What a resumed run's readers already have: the events its replay makes again are not sent twice.

A resumed run is driven again from its request (:mod:`reasonloop.runs.resume`), and its replay
makes again the events its stream already holds. :class:`Repeats` drops each regenerated event
equal to one in the stream (its type and content; not its seq or time). The answer is the
exception: it starts over at :class:`~reasonloop.events.Resumed` (a reader drops its partial
answer there) and its deltas all come again, since the call that was streaming it when the
process died is made again and need not say the same words. The run's end and ``Resumed``
itself are always new.
"""

from __future__ import annotations

import json
from collections import Counter

from reasonloop.events import AnswerDelta, Event, Resumed, ends_run

__all__ = ["Repeats"]


def _comparable(event: Event) -> bool:
    """Whether a regenerated event is dropped when its equal is in the stream: all but the run's
    answer (its deltas come again, its end is new) and ``Resumed`` (each is new)."""
    if isinstance(event, AnswerDelta):
        return event.depth != 0
    return not isinstance(event, Resumed) and not ends_run(event)


def _identity(event: Event) -> str:
    data = event.to_dict()
    for name in ("seq", "ts", "final"):  # where and when, not what
        data.pop(name, None)
    return json.dumps(data, sort_keys=True, ensure_ascii=False, default=str)


class Repeats:
    """The events a resumed run's stream already has: those its replay makes again are dropped.

    Each stored event answers for one regenerated event equal to it (two equal progress lines in
    the stream let two through the filter, not more).
    """

    __slots__ = ("_left",)

    def __init__(self, events: list[Event]) -> None:
        self._left = Counter(_identity(e) for e in events if _comparable(e))

    def seen(self, event: Event) -> bool:
        """Whether ``event`` is one the stream has (and is therefore not sent again)."""
        if not self._left or not _comparable(event):
            return False
        identity = _identity(event)
        left = self._left.get(identity, 0)
        if not left:
            return False
        if left == 1:
            del self._left[identity]
        else:
            self._left[identity] = left - 1
        return True
