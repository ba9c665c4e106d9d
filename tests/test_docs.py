"""The configuration reference in the docs stays loadable: docs that drift fail here."""

import tomllib
from pathlib import Path

from reasonloop.config import Settings

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_configuration_reference_is_valid_config():
    text = (DOCS / "configuration.md").read_text(encoding="utf-8").split("## Reference", 1)[1]
    block = "\n".join(line[4:] for line in text.splitlines() if line.startswith("    "))
    data = tomllib.loads(block.replace("<hex digest of the key>", "0" * 64))
    settings = Settings(**data)
    assert set(settings.agents) == {"researcher", "writer"}
    assert settings.tools.mcp_servers[0].allow == ["read_file"]
    assert settings.kb.options["retriever"]["rrf_k"] == 60


def test_the_configuration_reference_sets_approvals():
    text = (DOCS / "configuration.md").read_text(encoding="utf-8").split("## Reference", 1)[1]
    block = "\n".join(line[4:] for line in text.splitlines() if line.startswith("    "))
    settings = Settings(**tomllib.loads(block.replace("<hex digest of the key>", "0" * 64)))
    assert settings.approvals.tools["mcp:files"] == "once" and settings.approvals.timeout_s == 600
    assert settings.tools.mcp_servers[0].approval == "always"
    assert settings.agents["researcher"].approvals == {"mcp:files": "once"}
