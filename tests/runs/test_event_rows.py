"""Event rows held column by column: the same rows back, and nothing per row for the garbage collector."""

from __future__ import annotations

import gc

from reasonloop.runs.stores.event_rows import EventRows


def test_rows_come_back_in_order_across_appends_and_extends():
    rows = EventRows.of([("run_a", 1, "{}"), ("run_b", 1, '{"x":1}')])
    more = EventRows()
    more.append("run_a", 2, "[]")
    rows.extend(more)
    assert list(rows) == [("run_a", 1, "{}"), ("run_b", 1, '{"x":1}'), ("run_a", 2, "[]")]
    assert len(rows) == 3 and len(more) == 1


def test_holding_rows_adds_no_tracked_object_per_row():
    rows = EventRows()
    for i in range(1000):
        rows.append(f"run_{i}", i, f'{{"n":{i}}}')
    tracked = [o for o in gc.get_referents(rows.run_ids, rows.seqs, rows.payloads) if gc.is_tracked(o)]
    assert tracked == []  # strings and numbers only: a tuple per row would be 1,000 here
