"""Spans of real runs, read from the OpenTelemetry SDK's in-memory exporter and a loopback OTLP receiver."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from reasonloop import telemetry
from reasonloop.agents import Agent
from reasonloop.config import TelemetrySettings, load_settings
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.server import create_app
from tests.reasoning.helpers import Gauge, make_tools
from tests.runs.helpers import free_port
from tests.server.helpers import make_settings, serve
from tests.waiting import await_until

SECRET = "my account number is 4242"


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    reader = InMemoryMetricReader()
    tracing = telemetry.configure(load_settings(), span_exporter=exporter, metric_reader=reader, set_global=False)
    tracing.reader = reader  # for the metrics test
    yield exporter
    telemetry.shutdown()


def react(tool: str, value: str) -> str:
    return f"Thought: use {tool}\nAction: {tool}\nAction Input: {value}"


def tree(exporter) -> tuple[object, dict[int, list[object]]]:
    finished = exporter.get_finished_spans()
    (run,) = [s for s in finished if s.name.startswith("invoke_agent")]
    children: dict[int, list[object]] = {}
    for span in finished:
        if span.parent is not None:
            children.setdefault(span.parent.span_id, []).append(span)
    return run, children


async def test_a_react_run_with_two_tool_calls_is_one_span_with_its_model_and_tool_calls_below(spans):
    llm = ScriptedProvider(replies=[react("lookup", "alpha"), react("lookup", "beta"), "Final Answer: both"])
    agent = Agent("react", llm=llm, tools=make_tools())
    result = await agent.run(SECRET)
    assert result.content == "both"
    run, children = tree(spans)
    assert run.parent is None
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["reasonloop.strategy"] == "react"
    assert run.attributes["reasonloop.run.id"] == result.meta.run_id
    assert run.attributes["reasonloop.stop_reason"] == "final"
    assert run.attributes["gen_ai.usage.output_tokens"] == result.usage.completion_tokens
    below = sorted(children[run.context.span_id], key=lambda s: s.start_time)
    operations = [s.attributes["gen_ai.operation.name"] for s in below]
    assert operations == ["chat", "execute_tool", "chat", "execute_tool", "chat"]
    assert [s.name for s in below][1::2] == ["execute_tool lookup", "execute_tool lookup"]
    assert below[0].name == "chat unknown"  # the scripted model has no model name
    chats = [s for s in below if s.attributes["gen_ai.operation.name"] == "chat"]
    tools = [s for s in below if s.attributes["gen_ai.operation.name"] == "execute_tool"]
    assert len(chats) == 3 and len(tools) == 2
    assert all(c.attributes["gen_ai.provider.name"] == "scripted" for c in chats)
    assert all("gen_ai.request.model" in c.attributes for c in chats)
    assert sum(c.attributes["gen_ai.usage.input_tokens"] for c in chats) == result.usage.prompt_tokens
    assert [t.attributes["gen_ai.tool.name"] for t in tools] == ["lookup", "lookup"]
    assert len({t.attributes["gen_ai.tool.call.id"] for t in tools}) == 2
    for span in spans.get_finished_spans():  # content stays out unless asked for
        assert not any(SECRET in str(value) for value in span.attributes.values()), span.name


async def test_a_rewoo_runs_parallel_steps_are_siblings_under_the_run(spans):
    gauge = Gauge()
    llm = ScriptedProvider(replies=["#E1 = slow[a]\n#E2 = slow[b]\n#E3 = lookup[#E1 #E2]", "ok"])
    await Agent("rewoo", llm=llm, tools=make_tools(gauge)).run("q")
    assert gauge.max_active == 2
    run, children = tree(spans)
    below = children[run.context.span_id]
    slow = [s for s in below if s.name == "execute_tool slow"]
    assert len(slow) == 2
    first, second = sorted(slow, key=lambda s: s.start_time)
    assert second.start_time < first.end_time  # they overlapped
    assert [s.name for s in below].count("execute_tool lookup") == 1
    assert [s.attributes["gen_ai.operation.name"] for s in below].count("chat") == 2  # planner and solver


async def test_a_failing_tool_is_marked_with_its_error_type(spans):
    llm = ScriptedProvider(replies=[react("boom", "x"), "Final Answer: no"])
    await Agent("react", llm=llm, tools=make_tools()).run("q")
    (failed,) = [s for s in spans.get_finished_spans() if s.name == "execute_tool boom"]
    assert failed.attributes["error.type"].startswith("tool.")


async def test_prompt_and_completion_text_only_when_enabled():
    exporter = InMemorySpanExporter()
    telemetry.configure(
        load_settings(telemetry={"capture_content": True, "metrics": False}), span_exporter=exporter, set_global=False
    )
    try:
        llm = ScriptedProvider(replies=[react("lookup", "alpha"), "Final Answer: done"])
        await Agent("react", llm=llm, tools=make_tools()).run(SECRET)
    finally:
        telemetry.shutdown()
    chat = next(s for s in exporter.get_finished_spans() if s.name.startswith("chat"))
    assert SECRET in json.loads(chat.attributes["gen_ai.input.messages"])[-1]["parts"][0]["content"]
    assert "Action: lookup" in chat.attributes["gen_ai.output.messages"]
    tool_span = next(s for s in exporter.get_finished_spans() if s.name == "execute_tool lookup")
    assert "alpha" in tool_span.attributes["gen_ai.tool.call.arguments"]


async def test_model_calls_feed_the_genai_metrics(spans):
    llm = ScriptedProvider(replies=["Final Answer: hi"])
    await Agent("react", llm=llm, tools=make_tools()).run("q")
    data = telemetry.tracing.reader.get_metrics_data()
    metrics = {m.name: m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
    usage = metrics["gen_ai.client.token.usage"].data.data_points
    assert {p.attributes["gen_ai.token.type"] for p in usage} == {"input", "output"}
    assert metrics["gen_ai.client.operation.duration"].data.data_points[0].count == 1


TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


@pytest.mark.integration
@pytest.mark.parametrize("route", ["rest", "openai", "websocket"])
async def test_a_traceparent_header_makes_the_run_a_child_of_the_callers_trace(spans, tmp_path, route):
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(["Final Answer: traced"]), encoding="utf-8")
    settings = make_settings(tmp_path).model_copy(
        update={"llm": load_settings(llm={"provider": "scripted", "model": str(replies)}).llm}
    )
    headers = {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"}
    async with serve(create_app(settings), settings) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
        if route == "rest":
            run_id = (
                await client.post("/v1/runs", json={"question": "q", "reasoning": "react"}, headers=headers)
            ).json()["run_id"]
        elif route == "openai":
            body = {"model": "react", "messages": [{"role": "user", "content": "q"}]}
            run_id = (await client.post("/v1/chat/completions", json=body, headers=headers)).headers["x-run-id"]
        else:
            from websockets.asyncio.client import connect

            async with connect(url.replace("http://", "ws://") + "/v1/ws", additional_headers=headers) as ws:
                await ws.send(json.dumps({"type": "ask", "question": "q", "reasoning": "react"}))
                run_id = json.loads(await ws.recv())["run_id"]
        await await_until(
            lambda: any(s.name.startswith("invoke_agent") for s in spans.get_finished_spans()), what="the run's span"
        )
        text = (await client.get("/metrics")).text
    run, children = tree(spans)
    assert run.attributes["reasonloop.run.id"] == run_id
    assert format(run.context.trace_id, "032x") == TRACE_ID
    assert format(run.parent.span_id, "016x") == PARENT_ID and run.parent.is_remote
    assert run.attributes["reasonloop.tenant"] == "default"
    assert all(s.context.trace_id == run.context.trace_id for s in children[run.context.span_id])
    assert 'gen_ai_client_token_usage_count{gen_ai_operation_name="chat"' in text


class _Receiver(BaseHTTPRequestHandler):
    received: list[ExportTraceServiceRequest]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path == "/v1/traces":
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            self.received.append(request)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


async def test_the_same_spans_reach_a_loopback_otlp_http_receiver():
    received: list[ExportTraceServiceRequest] = []
    handler = type("Receiver", (_Receiver,), {"received": received})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        endpoint = f"http://127.0.0.1:{server.server_port}"
        telemetry.configure(
            load_settings(telemetry={"enabled": True, "endpoint": endpoint, "metrics": False}), set_global=False
        )
        llm = ScriptedProvider(replies=[react("lookup", "alpha"), react("lookup", "beta"), "Final Answer: both"])
        await Agent("react", llm=llm, tools=make_tools()).run("q")
        telemetry.shutdown()  # flushes the batch
    finally:
        server.shutdown()
        thread.join()
        server.server_close()
    names = [s.name for r in received for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans]
    assert names.count("execute_tool lookup") == 2 and names.count("invoke_agent react") == 1
    assert len([n for n in names if n.startswith("chat ")]) == 3


async def test_an_unreachable_collector_leaves_runs_alone_and_is_logged_once(caplog):
    closed = free_port()
    settings = TelemetrySettings(
        enabled=True, endpoint=f"http://127.0.0.1:{closed}", export_timeout_s=0.5, metrics=False
    )
    caplog.set_level(logging.WARNING)
    telemetry.configure(load_settings(telemetry=settings.model_dump()), set_global=False)
    try:
        for n in range(3):
            llm = ScriptedProvider(replies=[react("lookup", str(n)), "Final Answer: fine"])
            assert (await Agent("react", llm=llm, tools=make_tools()).run("q")).content == "fine"
            await asyncio.to_thread(telemetry.tracing.tracer_provider.force_flush)
    finally:
        telemetry.shutdown()
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.name for r in warnings] == ["reasonloop.telemetry"]
    assert "cannot export traces" in warnings[0].getMessage()


async def test_spans_reach_a_loopback_otlp_grpc_receiver():
    from concurrent import futures

    import grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

    received: list[ExportTraceServiceRequest] = []

    class Receiver(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request, context):
            received.append(request)
            return trace_service_pb2.ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Receiver(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        settings = {"enabled": True, "endpoint": f"http://127.0.0.1:{port}", "protocol": "grpc", "metrics": False}
        telemetry.configure(load_settings(telemetry=settings), set_global=False)
        llm = ScriptedProvider(replies=[react("lookup", "alpha"), "Final Answer: one"])
        await Agent("react", llm=llm, tools=make_tools()).run("q")
        await asyncio.to_thread(telemetry.shutdown)  # flushes the batch
    finally:
        server.stop(grace=None)
    names = [s.name for r in received for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans]
    assert sorted(names) == ["chat unknown", "chat unknown", "execute_tool lookup", "invoke_agent react"]


def test_reasonloop_ask_traces_its_run_when_otel_asks(capsys, tmp_path, monkeypatch):
    from tests.cli_run import run_cli

    received: list[ExportTraceServiceRequest] = []
    server = HTTPServer(("127.0.0.1", 0), type("Receiver", (_Receiver,), {"received": received}))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(["Final Answer: from the command line"]), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{server.server_port}")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    try:
        code, out, _ = run_cli(capsys, "ask", "--llm", f"scripted:{replies}", "--reasoning", "react", "hello")
    finally:
        server.shutdown()
        thread.join()
        server.server_close()
    assert code == 0 and "from the command line" in out
    names = [s.name for r in received for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans]
    assert "invoke_agent react" in names and any(n.startswith("chat ") for n in names)
    assert telemetry.tracing is None  # shut down (flushed) with the command


async def test_an_approval_is_recorded_on_its_tool_calls_span(spans):
    import hashlib

    from reasonloop.config import ApprovalSettings
    from reasonloop.tools.approval import ApprovalPolicies, Decision

    class Modifies:
        async def decide(self, ask, announce):
            ask.approval_id = "apr_1"
            await announce(ask)
            by = {"key": "ops", "tenant": "acme", "principal": "u:ana", "via": "rest"}
            return Decision(decision="modify", arguments={"key": "gamma"}, by=by, decided_at=1.5)

    llm = ScriptedProvider(replies=[react("lookup", '{"key": "alpha"}'), "Final Answer: done"])
    agent = Agent("react", llm=llm, tools=make_tools())
    agent.approve_with(Modifies(), ApprovalPolicies(ApprovalSettings(tools={"lookup": "always"})))
    await agent.run("q")
    (call,) = [s for s in spans.get_finished_spans() if s.name == "execute_tool lookup"]
    attributes = call.attributes
    assert attributes["reasonloop.approval.decision"] == "modify"
    assert (
        attributes["reasonloop.approval.by.principal"] == "u:ana" and attributes["reasonloop.approval.by.key"] == "ops"
    )
    assert attributes["reasonloop.approval.decided_at"] == 1.5
    digest = hashlib.sha256(b'{"key":"gamma"}').hexdigest()
    assert attributes["reasonloop.approval.arguments_run.sha256"] == digest
    assert "reasonloop.approval.arguments_run" not in attributes  # the arguments only with content captured
    assert [e.name for e in call.events] == ["reasonloop.approval"]
