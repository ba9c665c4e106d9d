"""Who may read a document: its readers, and the reader a search is made for.

A document's *readers* are principals of its tenant: users (``alice``, or ``user:alice``) and groups
(``group:finance``), stored in canonical form (``user:alice``, ``group:finance``). A document with no
readers set is read by everyone in its tenant. A :class:`Reader` is who a search, a listing or a
run is made for: a principal and its groups (an API key maps to one), or :data:`EVERYONE` (the
owner of the knowledge base: the library, the CLI, a server without keys), which reads every
document.

The rule is applied where the documents are: :func:`access_sql` is the condition the catalog's
queries add (the chunks a search may rank, the documents a listing shows, the counts of
``stats``), so a document the reader may not read never takes a place in a ranking. It fails
closed: a document whose readers cannot be read (not a JSON list of names) is read by no one.

A folder's documents take their readers from a sidecar file, :data:`SIDECAR` (``.readers``), in
their folder or the nearest folder above it up to the folder ingested: names separated by commas
or lines, ``#`` starting a comment::

    # finance/.readers
    group:finance
    alice
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reasonloop.errors import RequestInvalid

__all__ = [
    "EVERYONE",
    "SIDECAR",
    "UNREADABLE",
    "Reader",
    "access_sql",
    "parse_readers",
    "read_sidecar",
    "readers_json",
    "stored_readers",
    "user_of",
]

SIDECAR = ".readers"
"""The file that gives the documents of its folder (and the folders below) their readers."""

UNREADABLE = "!unreadable"
"""What a listing shows as the readers of a document whose stored readers cannot be read."""

_NAME = re.compile(r"^[A-Za-z0-9_.@+\-]{1,200}$")


@dataclass(frozen=True, slots=True)
class Reader:
    """Who a search or listing is made for.

    Args:
        principal: The user (``None``: a caller without a principal, who reads only the
            documents open to everyone and those of its groups).
        groups: The groups it is in.
        everything: Reads every document whatever its readers (:data:`EVERYONE`).
    """

    principal: str | None = None
    groups: frozenset[str] = field(default_factory=frozenset)
    everything: bool = False

    @classmethod
    def of(cls, principal: str | None, groups: Iterable[str] = ()) -> Reader:
        """A principal and its groups (``alice`` or ``user:alice``; ``finance`` or ``group:finance``)."""
        name = (principal or "").removeprefix("user:") or None
        return cls(principal=name, groups=frozenset(g.removeprefix("group:") for g in groups))

    @classmethod
    def parse(cls, spec: str, *, field_name: str = "reader") -> Reader:
        """A reader as a person writes it: ``alice``, ``alice:finance,hr``, or ``:finance`` (groups only).

        Raises:
            RequestInvalid: a name that is not letters, digits or ``_ . @ + -``.
        """
        principal, _, groups = spec.strip().partition(":")
        names = [g.strip() for g in groups.split(",") if g.strip()]
        for name in [principal.strip(), *names] if principal.strip() else names:
            if not _NAME.match(name):
                raise RequestInvalid(
                    f"{field_name}: {spec!r} is not PRINCIPAL, PRINCIPAL:GROUP,GROUP or :GROUP", field=field_name
                )
        return cls.of(principal.strip() or None, names)

    @property
    def names(self) -> list[str]:
        """The canonical names this reader answers to (``user:…``, ``group:…``), sorted."""
        out = [f"group:{g}" for g in self.groups]
        if self.principal:
            out.append(f"user:{self.principal}")
        return sorted(out)

    def may_read(self, stored: str | None) -> bool:
        """Whether this reader may read a document whose stored readers are ``stored`` (what
        :func:`access_sql` decides in SQL, for a row already read)."""
        if self.everything or stored is None:
            return True
        readers = stored_readers(stored)
        return readers is not None and readers != [UNREADABLE] and bool(set(readers) & set(self.names))

    def to_dict(self) -> dict[str, Any]:
        """This reader as JSON data (kept with a run, so a resumed run reads as its caller)."""
        return {"principal": self.principal, "groups": sorted(self.groups), "everything": self.everything}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Reader:
        """The reader :meth:`to_dict` gave (``None``: :data:`EVERYONE`, a run asked without one)."""
        if data is None or data.get("everything"):
            return EVERYONE
        return cls.of(data.get("principal"), data.get("groups") or ())


EVERYONE = Reader(everything=True)
"""The reader of every document (the knowledge base's owner)."""


def user_of(tenant: str, reader: Reader) -> str:
    """Whom per-user state (the judgements that guide later answers) is kept for: the tenant for
    a reader of everything, else the tenant and what the reader answers to, so that one reader's
    judgements (which may quote its documents) never guide another's runs."""
    return tenant if reader.everything else f"{tenant}#{','.join(reader.names)}"


def parse_readers(spec: str | Sequence[str], *, field_name: str = "readers") -> list[str]:
    """Readers as given by a person (``"alice, group:finance"`` or a list) in canonical form,
    sorted and without repeats.

    Raises:
        RequestInvalid: an empty list, or a name that is not ``NAME``, ``user:NAME`` or
            ``group:NAME`` (letters, digits, ``_ . @ + -``).
    """
    items = re.split(r"[,\n]", spec) if isinstance(spec, str) else list(spec)
    out: set[str] = set()
    for raw in items:
        if not isinstance(raw, str):
            raise RequestInvalid(f"{field_name}: each reader must be a string, got {raw!r}", field=field_name)
        item = raw.split("#", 1)[0].strip()
        if not item:
            continue
        kind, sep, name = item.partition(":")
        if not sep:
            kind, name = "user", item
        if kind not in ("user", "group") or not _NAME.match(name):
            raise RequestInvalid(
                f"{field_name}: {raw.strip()!r} is not a reader; write NAME or user:NAME for a user, "
                "group:NAME for a group (letters, digits, _ . @ + -)",
                field=field_name,
            )
        out.add(f"{kind}:{name}")
    if not out:
        raise RequestInvalid(
            f"{field_name}: no reader given; to open a document to everyone, clear its readers instead",
            field=field_name,
        )
    return sorted(out)


def readers_json(readers: Sequence[str] | None) -> str | None:
    """How readers are stored (``None``: everyone)."""
    return None if readers is None else json.dumps(list(readers))


def stored_readers(stored: str | None) -> list[str] | None:
    """Stored readers as a list (``None``: everyone; ``[UNREADABLE]``: they cannot be read)."""
    if stored is None:
        return None
    try:
        value = json.loads(stored)
    except (TypeError, ValueError):
        return [UNREADABLE]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return [UNREADABLE]
    return value


def access_sql(reader: Reader, column: str = "d.access") -> tuple[str, list[str]]:
    """``(condition, parameters)``: the documents (``column`` their readers) ``reader`` may read.

    Fails closed: a value that is not a JSON array matches no reader.
    """
    if reader.everything:
        return "1", []
    names = reader.names
    if not names:
        return f"{column} IS NULL", []
    marks = ",".join("?" * len(names))
    return (
        f"({column} IS NULL OR (json_valid({column}) AND json_type({column}) = 'array' AND "
        f"EXISTS (SELECT 1 FROM json_each({column}) WHERE json_each.value IN ({marks}))))",
        names,
    )


def read_sidecar(folder: Path, root: Path) -> list[str] | None:
    """The readers of a document in ``folder``: those of the nearest :data:`SIDECAR` in it or
    in a folder above it, up to ``root``; ``None`` when there is none.

    Raises:
        RequestInvalid: the nearest sidecar cannot be read or names no valid reader (its
            documents are then not ingested: they would otherwise be open to everyone).
    """
    folder, root = folder.resolve(), root.resolve()
    for place in (folder, *folder.parents):
        sidecar = place / SIDECAR
        if sidecar.is_file():
            try:
                text = sidecar.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise RequestInvalid(f"{sidecar}: cannot read the readers file ({exc})", field="readers") from exc
            return parse_readers(text, field_name=str(sidecar))
        if place == root or root not in place.parents:
            return None
    return None
