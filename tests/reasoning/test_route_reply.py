"""Reading the router's reply: the JSON real models write, and replies that hold no decision."""

from __future__ import annotations

import pytest

from reasonloop.reasoning.formats.route_reply import RouteReply, parse_route_reply, route_name


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"route": "multi_hop", "reason": "compares two offices"}', RouteReply("multi_hop", "compares two offices")),
        ('```json\n{"route": "single", "reason": "one fact"}\n```', RouteReply("single", "one fact")),
        (
            'Sure! Here is my decision: {"decision": "Multi-hop", "why": "a bridge"} Hope it helps.',
            RouteReply("multi_hop", "a bridge"),
        ),
        ('{"route": "no_retrieval"}', RouteReply("none")),
        ('{"label": "RESEARCH", "rationale": "a report"}', RouteReply("research", "a report")),
        ('{"note": "thinking"} {"route": "none", "reason": "a greeting"}', RouteReply("none", "a greeting")),
        ("multi_hop", RouteReply("multi_hop")),
        ("`single`", RouteReply("single")),
        ('研究 {"route": "research", "reason": "写报告"}', RouteReply("research", "写报告")),
    ],
)
def test_decisions_are_read_as_models_write_them(reply: str, expected: RouteReply) -> None:
    assert parse_route_reply(reply) == expected


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "I'm sorry, I can't help with deciding that.",
        '{"route": "multi_hop", "reason": ',  # cut off: broken JSON
        '{"route": "maybe", "reason": "unsure"}',  # an unknown label
        '{"answer": 42}',
        "This question is multi-hop because it compares two things.",  # prose: nothing is guessed
        "{" * 5000,
    ],
)
def test_a_reply_without_a_readable_decision_gives_none(reply: str) -> None:
    assert parse_route_reply(reply) is None


def test_route_names_are_normalised() -> None:
    assert [route_name(v) for v in ("Multi Hop", "multi-hop", "single_search", "NONE", "deep", 3)] == [
        "multi_hop",
        "multi_hop",
        "single",
        "none",
        None,
        None,
    ]
