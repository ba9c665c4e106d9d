"""Tool names every vendor accepts, and requests that carry them."""

from reasonloop.llm.messages import ChatRequest, Message, ToolCallPart, ToolSpec
from reasonloop.llm.wire_names import wire_name, wire_names, wire_request


def test_wire_names_are_safe_unique_and_bounded():
    assert wire_name("ChaDri.change_drink") == "ChaDri_change_drink"
    assert wire_name("9lives") == "_9lives"
    long = wire_name("x" * 100)
    assert len(long) == 64 and long != wire_name("x" * 99)
    names = wire_names(["a.b", "a_b"])
    assert len(set(names.values())) == 2 and names["a_b"] == "a_b"


def test_a_request_whose_names_are_fine_goes_as_it_is():
    request = ChatRequest([Message.user("q")], [ToolSpec(name="fine_name")], None, None, None)
    assert wire_request(request) == (request, None)


def test_earlier_calls_and_results_are_renamed_with_the_tools():
    messages = [
        Message.assistant("", [ToolCallPart(id="c", name="a.b", arguments={})]),
        Message.tool("c", "out", name="a.b"),
        Message.user("q"),
    ]
    request = ChatRequest(messages, [ToolSpec(name="a.b"), ToolSpec(name="ok")], None, None, None)
    wired, back = wire_request(request)
    assert [t.name for t in wired.tools] == ["a_b", "ok"] and back == {"a_b": "a.b", "ok": "ok"}
    assert wired.messages[0].tool_calls[0].name == "a_b" and wired.messages[1].name == "a_b"
    assert request.tools[0].name == "a.b" and messages[0].tool_calls[0].name == "a.b"  # the caller's untouched
