"""Real-world schema robustness: every BFCL v4 function spec becomes a tool.

Each spec is normalised into a :class:`SpecTool`, put in a request under the names
:meth:`LLM.stream` sends (:func:`wire_request`) and shaped by the OpenAI, Anthropic and Gemini
providers' own request builders (what they send), and every ground-truth call in ``possible_answer/`` is validated through
``Tool.invoke``. BFCL lists acceptable values per parameter (``""`` = may be omitted); the
call checked takes, for each parameter, the first listed value the parameter's schema
accepts (else the first listed value), so a failure means no listed value fits the spec.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from reasonloop.config import LLMSettings
from reasonloop.llm.anthropic_provider import AnthropicProvider
from reasonloop.llm.gemini_provider import GeminiProvider
from reasonloop.llm.gemini_schema import gemini_schema
from reasonloop.llm.messages import ChatRequest, Message
from reasonloop.llm.openai_provider import OpenAIProvider
from reasonloop.llm.wire_names import wire_request
from reasonloop.tools.base import ToolContext
from reasonloop.tools.schema import coerce_arguments
from reasonloop.tools.spec_tool import SpecTool

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "bfcl_v4"
EXPECTED_ITEMS = 3451
GOAL = 0.995
NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
GEMINI_KEYS = {
    "type",
    "format",
    "description",
    "nullable",
    "enum",
    "properties",
    "required",
    "items",
    "anyOf",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "minProperties",
    "maxProperties",
    "title",
}
GEMINI_TYPES = {"string", "number", "integer", "boolean", "array", "object"}
OMIT = object()

pytestmark = [
    pytest.mark.integration,  # every spec of the evaluation data beside the repository
    pytest.mark.skipif(
        not DATA.is_dir(), reason=f"BFCL data not found at {DATA} (the shared evaluation data, beside the repository)"
    ),
]


def _items(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _all_items() -> dict[str, list[dict[str, Any]]]:
    return {p.stem.removeprefix("BFCL_v4_"): _items(p) for p in sorted(DATA.glob("BFCL_v4_*.json"))}


async def _echo(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return args


_TOOLS: dict[str, SpecTool] = {}


def _tool(fn: dict[str, Any]) -> SpecTool:
    key = json.dumps(fn, sort_keys=True)
    if key not in _TOOLS:
        _TOOLS[key] = SpecTool(fn["name"], fn.get("description", ""), fn.get("parameters"), _echo)
    return _TOOLS[key]


def _check_gemini(node: Any, where: str) -> list[str]:
    """Problems that Gemini's Schema subset would reject."""
    if not isinstance(node, dict):
        return [f"{where}: not an object"]
    problems = [f"{where}: key {k!r}" for k in node if k not in GEMINI_KEYS]
    kind = node.get("type")
    if isinstance(kind, str):
        kind = kind.lower()  # the SDK's Schema takes OpenAPI's upper-case type names
    if kind is not None and kind not in GEMINI_TYPES:
        problems.append(f"{where}: type {kind!r}")
    if "enum" in node and (kind != "string" or not all(isinstance(v, str) for v in node["enum"])):
        problems.append(f"{where}: enum on {kind!r}")
    if kind == "object" and not node.get("properties"):
        problems.append(f"{where}: object without properties")
    if ("properties" in node or "required" in node) and kind != "object":
        problems.append(f"{where}: properties on {kind!r}")
    if kind == "array" and not isinstance(node.get("items"), dict):
        problems.append(f"{where}: array without items")
    for name, prop in (node.get("properties") or {}).items():
        problems += _check_gemini(prop, f"{where}.{name}")
    if isinstance(node.get("items"), dict):
        problems += _check_gemini(node["items"], f"{where}[]")
    for i, branch in enumerate(node.get("anyOf") or []):
        problems += _check_gemini(branch, f"{where}|{i}")
    return problems


def _providers(monkeypatch: pytest.MonkeyPatch) -> tuple[OpenAIProvider, AnthropicProvider, GeminiProvider]:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(name, "test-key")  # the clients are made, never called
    local = "http://127.0.0.1:9"
    return (
        OpenAIProvider(LLMSettings(provider="openai", model="m", base_url=local)),
        AnthropicProvider(LLMSettings(provider="anthropic", model="m", base_url=local)),
        GeminiProvider(LLMSettings(provider="gemini", model="m", base_url=local)),
    )


def test_every_spec_normalises_and_goes_out_as_each_provider_sends_it(monkeypatch):
    openai, anthropic, gemini = _providers(monkeypatch)
    problems: list[str] = []
    items = 0
    functions = 0
    for category, rows in _all_items().items():
        for item in rows:
            items += 1
            specs = [_tool(fn).spec() for fn in item["function"]]
            functions += len(specs)
            if not specs:
                continue
            for spec in specs:
                assert spec.parameters["type"] == "object" and isinstance(spec.parameters["properties"], dict)
            request, _ = wire_request(ChatRequest([Message.user("q")], specs, None, None, None))
            sent_openai = [t["function"] for t in openai._params(request)["tools"]]
            sent_anthropic = anthropic._params(request)["tools"]
            [declarations] = [t.function_declarations for t in gemini._config(request).tools]
            names = [t["name"] for t in sent_openai]
            assert len(set(names)) == len(names), item["id"]
            for shape in (*names, *(t["name"] for t in sent_anthropic), *(d.name for d in declarations)):
                assert NAME_RE.match(shape), shape
            for spec, out_openai, out_anthropic, declaration in zip(
                specs, sent_openai, sent_anthropic, declarations, strict=True
            ):
                assert out_openai["parameters"] == spec.parameters == out_anthropic["input_schema"]
                schema = gemini_schema(spec.parameters)  # what the provider gives the SDK's Schema
                if not schema.get("properties"):  # a tool that takes nothing is declared without parameters
                    assert declaration.parameters is None, item["id"]
                    continue
                assert declaration.parameters is not None, item["id"]
                problems += [f"{category}/{item['id']}: {p}" for p in _check_gemini(schema, "")]
    print(f"\nBFCL specs: {items} items, {functions} functions; Gemini subset problems: {len(problems)}")
    assert items == EXPECTED_ITEMS
    assert problems == [], problems[:10]


def _realize(value: Any) -> Any:
    """A ground-truth value with nested option lists resolved to their first real option."""
    if isinstance(value, dict):
        out = {}
        for key, options in value.items():
            if isinstance(options, list):
                real = [o for o in options if o not in ("", None)]
                if real:
                    out[key] = _realize(real[0])
                elif None in options:
                    out[key] = None
            else:
                out[key] = _realize(options)
        return out
    if isinstance(value, list):
        return [_realize(v) for v in value]
    return value


def _choose(options: list[Any], schema: dict[str, Any], required: bool) -> Any:
    tried = []
    for option in (o for o in options if o != ""):
        value = coerce_arguments(_realize(option), schema)
        if not list(jsonschema.Draft7Validator(schema).iter_errors(value)):
            return value
        tried.append(value)
    if "" in options and not required:
        return OMIT
    return tried[0] if tried else OMIT


def _reason(error: str) -> str:
    if "is a required property" in error:
        return "answer omits a required parameter"
    if "is not one of" in error:
        return "answer value outside the spec's enum"
    if "is not of type" in error:
        return "answer value of another type than the spec"
    return "other: " + error[:80]


async def test_ground_truth_calls_validate_against_the_specs():
    passed: Counter[str] = Counter()
    total: Counter[str] = Counter()
    reasons: dict[str, Counter[str]] = defaultdict(Counter)
    controls = controls_caught = 0
    ctx = ToolContext()
    for answers_path in sorted((DATA / "possible_answer").glob("*.json")):
        category = answers_path.stem.removeprefix("BFCL_v4_")
        specs = {item["id"]: item for item in _items(DATA / answers_path.name)}
        for answer in _items(answers_path):
            functions = {fn["name"]: fn for fn in specs[answer["id"]]["function"]}
            for call in answer["ground_truth"]:
                ((name, options),) = call.items()
                total[category] += 1
                tool = _tool(functions[name])
                schema = tool.spec().parameters
                required = set(schema.get("required", []))
                args = {}
                for key, opts in options.items():
                    value = _choose(opts, schema["properties"].get(key, {}), key in required)
                    if value is not OMIT:
                        args[key] = value
                out = await tool.invoke(args, ctx)
                if out.ok:
                    passed[category] += 1
                    if required:  # negative control: the same call without a required parameter
                        controls += 1
                        broken = {k: v for k, v in args.items() if k != sorted(required)[0]}
                        controls_caught += not (await tool.invoke(broken, ctx)).ok
                else:
                    assert out.error["code"] == "tool.invalid_arguments"
                    reasons[category][_reason(out.error["error"])] += 1

    lines = [f"{'category':<20}{'passed':>8}{'calls':>8}{'rate':>9}  failure reasons"]
    for category in sorted(total):
        why = "; ".join(f"{r} ×{n}" for r, n in reasons[category].most_common()) or "-"
        rate = passed[category] / total[category]
        lines.append(f"{category:<20}{passed[category]:>8}{total[category]:>8}{rate:>9.2%}  {why}")
    overall = sum(passed.values()) / sum(total.values())
    lines.append(f"{'all':<20}{sum(passed.values()):>8}{sum(total.values()):>8}{overall:>9.2%}")
    print("\n" + "\n".join(lines))
    assert sum(total.values()) > 3000
    assert controls > 1000 and controls_caught == controls
    assert overall >= GOAL
