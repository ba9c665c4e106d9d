"""The write-ahead journal: events durable before readers see them, recovered after a crash, cleaned up once stored."""

from __future__ import annotations

import asyncio
import errno
import fcntl
import json
import os
import subprocess
import sys
import threading

import pytest

from reasonloop.config import RunsSettings
from reasonloop.errors import RunStoreUnavailable
from reasonloop.events import AnswerDelta, RunStarted, event_adapter
from reasonloop.runs.manager import RunManager
from reasonloop.runs.models import RunRecord, RunRequest
from reasonloop.runs.recording.journal import Journal, file_prefix
from reasonloop.runs.recording.journal_recovery import recover_journals
from reasonloop.runs.recovery import recover_interrupted
from tests.runs.helpers import GatedRunner
from tests.runs.test_recording import GatedStore
from tests.waiting import await_until


def journal_lines(directory: str) -> list[tuple[str, dict]]:
    """The lines of every segment (a segment being written has reserved NUL bytes after them)."""
    lines = []
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name), "rb") as file:
            data = file.read().split(b"\0", 1)[0]
        for raw in data.decode().splitlines():
            run_id, _, payload = raw.partition("\t")
            lines.append((run_id, json.loads(payload)))
    return lines


def stamped(run_id: str, seq: int, text: str = "x") -> str:
    event = AnswerDelta(text=text) if seq > 1 else RunStarted(reasoning="r", question="q")
    event.run_id, event.seq = run_id, seq
    return event.to_json()


async def test_readers_get_events_once_journaled_while_the_store_lags(store):
    gated = GatedStore(store)
    gated.gate.clear()  # the store records nothing yet
    runner = GatedRunner(steps=2)
    manager = RunManager(gated, runner, RunsSettings(record_interval_s=0.01))
    await manager.open()
    try:
        record = await manager.start(RunRequest(question="q"))
        run = manager.execution(record.run_id)
        live = run.live
        seen: list[int] = []
        live.attach(lambda payload, terminal: seen.append(event_adapter.validate_json(payload).seq))
        await runner.entered_event(record.run_id).wait()
        await await_until(lambda: len(seen) >= 2, what="the run's first two events seen")
        assert seen == [1, 2] and await store.events(record.run_id) == []
        assert [e["seq"] for _, e in journal_lines(store.journal_dir)] == [1, 2]  # on disk before it was seen
        gated.gate.set()
        runner.finish(record.run_id)
        await asyncio.wait_for(run.task, 10)
        assert [e.seq for e in await store.events(record.run_id)] == seen == [1, 2, 3, 4]
        assert (await store.get_run(record.run_id)).status == "completed"
    finally:
        await manager.close()
    assert os.listdir(store.journal_dir) == []  # everything is in the store: the segment is gone


def journal_in_dead_process(
    directory: str, payloads: list[str], instance: str = "elsewhere:1:dead", run_id: str = "run_dead"
) -> None:
    """Journal ``payloads`` from another process that then exits, the last line cut short."""
    script = (
        "import sys; from reasonloop.runs.recording.journal import Journal\n"
        "j = Journal(sys.argv[1], sys.argv[2]); j.open()\n"
        "for line in sys.stdin: j.write(sys.argv[3], line.rstrip('\\n'))\n"
    )
    lines = "".join(payload + "\n" for payload in payloads)
    args = [sys.executable, "-c", script, directory, instance, run_id]
    subprocess.run(args, input=lines, text=True, check=True)
    name = next(n for n in os.listdir(directory) if n.startswith(file_prefix(instance)))
    with open(os.path.join(directory, name), "r+b") as file:
        data = file.read()
        assert data.endswith(b"\0")  # it died with space reserved after its lines
        file.seek(data.index(b"\0"))
        file.write(run_id.encode() + b'\t{"type":"answer_delta","se')  # a line cut short by the crash


@pytest.mark.integration
async def test_events_journaled_by_a_dead_process_reach_the_store_before_it_is_marked_interrupted(store, tmp_path):
    directory = store.journal_dir
    await store.create_run(RunRecord(run_id="run_dead", status="running", instance="elsewhere:1:dead"))
    journal_in_dead_process(directory, [stamped("run_dead", seq, f"part{seq} ") for seq in (1, 2, 3)])
    await store.append_event("run_dead", event_adapter.validate_json(stamped("run_dead", 1)))  # already stored
    assert await recover_journals(directory, store) == 2
    assert os.listdir(directory) == []
    assert [e.seq for e in await store.events("run_dead")] == [1, 2, 3]
    assert await recover_interrupted(store, me="me") == ["run_dead"]
    run = await store.get_run("run_dead")
    assert run.status == "interrupted" and run.content == "part2 part3 "


async def test_a_segment_held_by_a_live_process_is_left_alone(store):
    journal = Journal(store.journal_dir, "alive:1:x")
    journal.open()
    try:
        journal.write("run_live", stamped("run_live", 1))
        assert await recover_journals(store.journal_dir, store) == 0
        assert await store.events("run_live") == [] and len(os.listdir(store.journal_dir)) == 1
    finally:
        journal.close()


def test_segments_rotate_and_go_once_the_store_holds_their_events(tmp_path):
    journal = Journal(str(tmp_path / "j"), "me:1:x", max_bytes=300)
    journal.open()
    first = journal.write("run_a", stamped("run_a", 1))
    second = journal.write("run_a", stamped("run_a", 2, "y" * 300))  # past max_bytes: a new segment follows
    assert first is second and journal.current is not first and len(os.listdir(tmp_path / "j")) == 2
    journal.settle(first, recorded=True)
    assert os.path.exists(first.path)  # one event still unconfirmed
    journal.settle(second, recorded=True)
    assert not os.path.exists(first.path) and journal.retired == []
    third = journal.write("run_a", stamped("run_a", 3))
    journal.settle(third, recorded=False)  # the store failed it: kept for recovery
    journal.close()
    assert os.listdir(tmp_path / "j") == [os.path.basename(third.path)]


async def test_a_dead_run_whose_answer_is_stored_but_not_its_status_gets_that_status(store):
    await store.create_run(RunRecord(run_id="run_done", status="running", instance="elsewhere:1:dead"))
    for line in (stamped("run_done", 1), stamped("run_done", 2, "all of it")):
        await store.append_event("run_done", event_adapter.validate_json(line))
    answer = event_adapter.validate_json(
        json.dumps({"type": "answer", "run_id": "run_done", "seq": 3, "text": "all of it"})
    )
    await store.append_event("run_done", answer)
    assert await recover_interrupted(store, me="me") == []
    run = await store.get_run("run_done")
    assert run.status == "completed" and run.content == "all of it" and run.last_seq == 3


async def test_a_full_disk_fails_the_run_with_a_clear_error_and_publishes_nothing_unjournaled(store, monkeypatch):
    runner = GatedRunner(steps=3)
    manager = RunManager(store, runner, RunsSettings())
    await manager.open()
    try:
        record = await manager.start(RunRequest(question="q"))
        run = manager.execution(record.run_id)
        live = run.live
        seen: list[dict] = []
        live.attach(lambda payload, terminal: seen.append(json.loads(payload)))
        await runner.entered_event(record.run_id).wait()
        real_write = manager.journal.write

        def full(run_id: str, payload: str):
            if '"answer_delta"' in payload:
                raise OSError(errno.ENOSPC, "No space left on device")
            return real_write(run_id, payload)

        monkeypatch.setattr(manager.journal, "write", full)
        runner.finish(record.run_id)
        await asyncio.wait_for(run.task, 10)
        assert [e["type"] for e in seen] == ["run_started", "answer_delta", "error"]
        assert seen[-1]["code"] == "run.store_unavailable" and "No space left" in seen[-1]["message"]
        assert [e["seq"] for e in seen] == [1, 2, 3]  # no gap where the refused event would have been
    finally:
        await manager.close()


async def test_a_journal_directory_that_cannot_be_created_stops_start_up_with_the_reason(store, tmp_path):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the journal directory should go")
    store.journal_dir = str(blocker / "journal")
    manager = RunManager(store, GatedRunner(), RunsSettings())
    try:
        await manager.open()
    except RunStoreUnavailable as exc:
        assert "cannot open the run journal" in exc.message and "not-a-directory" in exc.message
    else:
        raise AssertionError("the manager opened without a journal")
    finally:
        await manager.close()


@pytest.mark.integration
async def test_runs_of_a_dead_process_wait_while_another_process_imports_its_journal(store):
    await store.create_run(RunRecord(run_id="run_dead", status="running", instance="elsewhere:1:dead"))
    journal_in_dead_process(store.journal_dir, [stamped("run_dead", seq, f"part{seq} ") for seq in (1, 2)])
    segment = os.path.join(store.journal_dir, os.listdir(store.journal_dir)[0])
    other = os.open(segment, os.O_RDONLY)
    fcntl.flock(other, fcntl.LOCK_EX)  # another server process is importing it right now
    manager = RunManager(store, GatedRunner(), RunsSettings())
    try:
        assert await manager.open() == []  # not marked interrupted on what the store holds so far
        assert (await store.get_run("run_dead")).status == "running"
        os.close(other)  # that process died before finishing: the segment is still there
        assert await manager.upkeep.recover() == ["run_dead"]  # the next housekeeping round
        assert [e.type for e in await store.events("run_dead")] == ["run_started", "answer_delta", "answer"]
        assert (await store.get_run("run_dead")).content == "part2 "
    finally:
        await manager.close()


@pytest.mark.integration
async def test_a_failed_import_leaves_every_segment_for_the_next_attempt(store, monkeypatch):
    from reasonloop.runs.recording import journal_recovery as journal_module

    for name in ("a", "b"):
        journal_in_dead_process(store.journal_dir, [stamped("run_" + name, 1)], f"gone:1:{name}", "run_" + name)

    async def unavailable(store, items):
        raise RunStoreUnavailable("database is locked")

    monkeypatch.setattr(journal_module, "append_events", unavailable)
    try:
        await recover_journals(store.journal_dir, store)
    except RunStoreUnavailable:
        pass
    else:
        raise AssertionError("the import did not fail")
    monkeypatch.undo()
    assert await recover_journals(store.journal_dir, store) == 2  # nothing left locked by the failed attempt
    assert os.listdir(store.journal_dir) == []


def test_a_full_disk_refuses_the_line_and_the_journal_goes_on_once_there_is_space(tmp_path, monkeypatch):
    journal = Journal(str(tmp_path), "me:1:x")
    journal.open()
    journal.write("run_a", stamped("run_a", 1))
    real = os.posix_fallocate

    def full(fd: int, offset: int, length: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full)
    big = stamped("run_b", 2, "b" * (3 << 20))  # past the space reserved so far: more is needed
    try:
        journal.write("run_b", big)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    else:
        raise AssertionError("a full disk went unnoticed")
    monkeypatch.setattr(os, "posix_fallocate", real)
    journal.write("run_c", stamped("run_c", 1))
    journal.write("run_d", big)  # the space is there again
    assert [(run_id, e["seq"]) for run_id, e in journal_lines(str(tmp_path))] == [
        ("run_a", 1),
        ("run_c", 1),
        ("run_d", 2),
    ]
    journal.close()


def test_a_growing_segment_is_mapped_once_and_reserved_ahead_off_the_writing_thread(tmp_path, monkeypatch):
    journal = Journal(str(tmp_path), "me:1:x")
    journal.open()
    segment = journal.current
    mapped = segment.map
    callers: list[str] = []
    real = os.posix_fallocate

    def recorded(fd: int, offset: int, length: int) -> None:
        callers.append(threading.current_thread().name)
        real(fd, offset, length)

    monkeypatch.setattr(os, "posix_fallocate", recorded)
    payloads = [stamped("run_a", seq, "r" * 1000) for seq in range(2, 5002)]  # about 5 MB: five chunks
    for payload in payloads:
        journal.write("run_a", payload)
    assert segment.map is mapped  # never mapped again as it grew
    assert len(callers) >= 4 and all(name.startswith("run-journal-reserve") for name in callers)
    assert segment.size <= os.path.getsize(segment.path) <= segment.size + (2 << 20)  # a chunk or so ahead
    segment.failed = True
    journal.close()
    assert [e["seq"] for _, e in journal_lines(str(tmp_path))] == list(range(2, 5002))


def test_a_reservation_that_failed_on_the_journals_thread_is_made_again_where_the_space_is_needed(
    tmp_path, monkeypatch
):
    journal = Journal(str(tmp_path), "me:1:x")
    journal.open()
    real = os.posix_fallocate
    attempts: list[str] = []

    def full_on_its_thread(fd: int, offset: int, length: int) -> None:
        attempts.append(threading.current_thread().name)
        if threading.current_thread() is not threading.main_thread():
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd, offset, length)

    monkeypatch.setattr(os, "posix_fallocate", full_on_its_thread)
    for seq in range(2, 2502):  # about 2.5 MB: past the first chunk and the one that failed ahead
        segment = journal.write("run_a", stamped("run_a", seq, "f" * 1000))
    assert "MainThread" in attempts and any(name.startswith("run-journal-reserve") for name in attempts)
    assert os.path.getsize(segment.path) >= segment.size
    segment.failed = True
    journal.close()
    assert [e["seq"] for _, e in journal_lines(str(tmp_path))] == list(range(2, 2502))


def _resident_kib(path: str) -> int:
    """Resident KiB of this process's mappings of ``path`` (Linux ``/proc/self/smaps``)."""
    total, inside = 0, False
    with open("/proc/self/smaps", encoding="utf-8") as smaps:
        for line in smaps:
            if line[:1].isalnum() and "-" in line.split(" ", 1)[0]:  # a mapping's header line
                inside = line.rstrip("\n").endswith(path)
            elif inside and line.startswith("Rss:"):
                total += int(line.split()[1])
    return total


def test_a_long_segment_keeps_little_of_itself_resident_and_all_of_its_lines(tmp_path):
    journal = Journal(str(tmp_path), "me:1:x")
    journal.open()
    payloads = [stamped("run_a", seq, "z" * 5000) for seq in range(2, 4202)]  # about 21 MB
    for payload in payloads:
        segment = journal.write("run_a", payload)
    # written chunk by chunk: only the last chunk or two of them stay resident
    assert segment.size > 20 << 20 and _resident_kib(segment.path) <= 3 * 1024
    segment.failed = True  # kept at close, as a store failure would keep it
    journal.close()
    (name,) = os.listdir(tmp_path)
    data = (tmp_path / name).read_bytes()
    assert b"\0" not in data  # cut to its lines
    assert [e["seq"] for _, e in journal_lines(str(tmp_path))] == list(range(2, 4202))


def test_a_segment_reserves_no_more_than_it_may_hold_before_it_rotates(tmp_path):
    journal = Journal(str(tmp_path), "me:1:x", max_bytes=5 << 20)
    journal.open()
    first = journal.current
    while journal.current is first:
        journal.write("run_a", stamped("run_a", 2, "w" * 3000))
    assert os.path.getsize(first.path) <= (5 << 20) + (1 << 20)  # not twice max_bytes
    first.failed = True
    journal.close()


def test_a_rotation_without_space_is_retried_a_chunk_later_not_at_every_event(tmp_path, monkeypatch, caplog):
    journal = Journal(str(tmp_path), "me:1:x", max_bytes=4096)
    journal.open()
    attempts: list[int] = []
    real_new = journal._new_segment

    def full() -> object:
        attempts.append(journal.current.size)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(journal, "_new_segment", full)
    for seq in range(2, 2000):  # about 300 KB past max_bytes
        journal.write("run_a", stamped("run_a", seq))
    assert 1 <= len(attempts) <= 2 and len(caplog.records) == len(attempts)
    monkeypatch.setattr(journal, "_new_segment", real_new)
    full_segment = journal.current
    for _ in range(1000):  # a chunk past the last attempt, the next one is made
        journal.write("run_a", stamped("run_a", 2, "v" * 2000))
        if journal.current is not full_segment:
            break
    assert journal.current is not full_segment and full_segment.size >= attempts[-1] + (1 << 20)
    journal.close()


def damage_second_line(path: str) -> None:
    with open(path, "r+b") as file:
        data = file.read()
        file.seek(data.index(b"\n") + 1 + 10)
        file.write(b"\0" * 40)  # a stretch lost in a power cut, inside the second line


@pytest.mark.integration
async def test_a_damaged_stretch_of_a_dead_segment_costs_only_the_lines_it_touches(store):
    directory = store.journal_dir
    await store.create_run(RunRecord(run_id="run_dead", status="running", instance="elsewhere:1:dead"))
    journal_in_dead_process(directory, [stamped("run_dead", seq, f"part{seq} ") for seq in (1, 2, 3, 4)])
    name = next(n for n in os.listdir(directory) if n.endswith(".jsonl"))
    damage_second_line(os.path.join(directory, name))
    assert await recover_journals(directory, store) == 3
    assert [e.seq for e in await store.events("run_dead")] == [1, 3, 4]
