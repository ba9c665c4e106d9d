"""The public surface changes only on purpose."""

import reasonloop


def test_public_names_are_exactly_the_documented_ones():
    assert sorted(reasonloop.__all__) == sorted(
        [
            "Agent",
            "Answer",
            "AnswerDelta",
            "Citation",
            "ErrorEvent",
            "Event",
            "KnowledgeBase",
            "Plan",
            "PlannedStep",
            "Progress",
            "RunResult",
            "RunStarted",
            "Searched",
            "Step",
            "Thought",
            "ToolCall",
            "ToolResult",
            "Usage",
            "__version__",
        ]
    )


def test_every_public_name_resolves():
    for name in reasonloop.__all__:
        assert getattr(reasonloop, name) is not None
    assert reasonloop.Agent.__name__ == "Agent"
    assert reasonloop.KnowledgeBase.__name__ == "KnowledgeBase"
