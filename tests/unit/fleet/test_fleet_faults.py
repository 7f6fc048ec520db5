"""The fleet under faults, piece by piece and without Redis: the outage link, the lease clock, the
replay of events from events.jsonl, the epoch check, waiting for the broker, and a job run whose
store fails and comes back (tests/fleet/test_chaos.py does it all with real processes)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import orjson
import pytest
import redis.exceptions

from kilo_loop.fleet.connection import backoff_delays, wait_for_broker
from kilo_loop.fleet.jobrun import RESULT_FILE, JobRun, WorkerConfig
from kilo_loop.fleet.keeper import FleetKeeper, came_back_empty, unfinished
from kilo_loop.fleet.lease import LeaseClock
from kilo_loop.fleet.link import Link
from kilo_loop.fleet.replay import lost_from_stream, not_in_stream
from kilo_loop.fleet.store import Job

DOWN = redis.exceptions.ConnectionError("Error 111 connecting to 127.0.0.1:1. Connection refused.")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def events(*seqs: int, kind: str = "log") -> list[dict[str, Any]]:
    return [{"seq": n, "type": kind} for n in seqs]


def write_events(path: Path, seqs: range) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events(*seqs)))
    return path


# ----------------------------------------------------------------------------- link
def test_an_outage_is_said_once_and_retries_back_off() -> None:
    said: list[str] = []
    clock = Clock()
    link = Link(said.append, clock)
    assert link.up and not link.due()
    link.lost(DOWN)
    link.lost(DOWN)
    assert not link.up and len(said) == 1 and "events wait in events.jsonl" in said[0]
    assert not link.due()
    clock.now += 0.6
    assert link.due()
    clock.now += 5
    assert link.restored() == pytest.approx(5.6) and link.up


def test_retry_delays_double_up_to_a_cap() -> None:
    delay = backoff_delays(0.5, 4.0)
    assert [delay() for _ in range(6)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]


# ----------------------------------------------------------------------------- lease
def test_a_cut_off_worker_stops_before_redis_could_expire_its_lease() -> None:
    clock = Clock()
    lease = LeaseClock(15_000, 5.0, clock)
    lease.renewed(sent_at=clock.now)
    clock.now += 9.9
    assert not lease.expired()
    clock.now += 0.2
    assert lease.expired(), "stopped 5 s before the 15 s lease could lapse in Redis"
    lease.renewed(sent_at=clock.now - 1)  # counted from when the renewal was sent, not answered
    assert lease.remaining() == pytest.approx(9.0)


# ----------------------------------------------------------------------------- replay
def test_events_the_stream_lost_come_back_from_the_file_in_order(tmp_path: Path) -> None:
    file = write_events(tmp_path / "events.jsonl", range(1, 11))
    batches = list(lost_from_stream(file, stream_last=3, published_last=8, batch=2))
    assert [[e["seq"] for e in b] for b in batches] == [[4, 5], [6, 7], [8]]


def test_nothing_is_replayed_when_the_stream_has_all_it_was_sent(tmp_path: Path) -> None:
    file = write_events(tmp_path / "events.jsonl", range(1, 6))
    assert list(lost_from_stream(file, stream_last=5, published_last=5)) == []
    assert list(lost_from_stream(tmp_path / "none.jsonl", stream_last=0, published_last=5)) == []


def test_a_torn_last_line_is_neither_lost_nor_sent(tmp_path: Path) -> None:
    file = write_events(tmp_path / "events.jsonl", range(1, 4))
    with file.open("ab") as handle:
        handle.write(b'{"seq": 4, "ty')
    assert [e["seq"] for b in lost_from_stream(file, 0, 9) for e in b] == [1, 2, 3]


def test_held_events_the_stream_already_has_are_not_sent_twice() -> None:
    assert [e["seq"] for e in not_in_stream(events(5, 6, 7), stream_last=6)] == [7]


# ----------------------------------------------------------------------------- epoch
def test_an_epoch_that_is_gone_or_replaced_means_redis_came_back_empty() -> None:
    assert not came_back_empty(None, "a")  # the first look
    assert not came_back_empty("a", "a")
    assert came_back_empty("a", None) and came_back_empty("a", "b")


class _KeeperStore:
    """Redis as the keeper sees it: jobs, results and an epoch that can be wiped."""

    def __init__(self) -> None:
        self.jobs: dict[str, Job] = {}
        self.results: set[str] = set()
        self.epoch_value: str | None = None
        self.restored: list[str] = []

    def wipe(self) -> None:
        self.jobs, self.results, self.epoch_value = {}, set(), None

    def epoch(self) -> str | None:
        return self.epoch_value

    def ensure_epoch(self) -> str:
        self.epoch_value = self.epoch_value or f"e{len(self.restored)}-{id(self.jobs)}"
        return self.epoch_value

    def run_ids(self) -> list[str]:
        return list(self.jobs)

    def job(self, run_id: str) -> Job | None:
        return self.jobs.get(run_id)

    def finished(self, run_id: str) -> bool:
        return run_id in self.results

    def finished_many(self, run_ids: list[str]) -> list[bool]:
        return [r in self.results for r in run_ids]

    def restore(self, job: Job) -> None:
        self.jobs[job.run_id] = job
        self.restored.append(job.run_id)


def test_the_fleet_resubmits_what_an_empty_redis_forgot_and_only_that() -> None:
    store, queued, said = _KeeperStore(), [], []
    keeper = FleetKeeper(store, queued.append, said.append)  # type: ignore[arg-type]
    for name in ("a", "b", "c"):
        store.jobs[name] = Job(name, "/repo", "g.md", "# g")
    store.results.add("a")
    assert keeper.check() == [] and queued == []
    assert keeper.check() == [], "an unchanged epoch re-submits nothing"
    store.wipe()
    assert keeper.check() == ["b", "c"]
    assert [job.run_id for job in queued] == ["b", "c"] and store.restored == ["b", "c"]
    assert "came back empty" in said[-1] and "b, c" in said[-1]
    assert keeper.check() == [], "once per wipe"


def test_unfinished_is_every_job_without_a_result() -> None:
    jobs = {n: Job(n, "/r", "g.md", "x") for n in "xyz"}
    assert [job.run_id for job in unfinished(jobs, {"y"})] == ["x", "z"]


# ----------------------------------------------------------------------------- waiting for the broker
class _Pinger:
    def __init__(self, failures: int) -> None:
        self.failures = failures

    def ping(self) -> bool:
        if self.failures:
            self.failures -= 1
            raise DOWN
        return True


def test_waiting_for_the_broker_says_so_once_and_reports_its_return() -> None:
    said: list[str] = []
    clock = Clock()

    def sleep(seconds: float) -> None:
        clock.now += seconds

    assert wait_for_broker(_Pinger(4), "redis://:pw@h:1/0", None, said.append, sleep, clock) is None
    assert said == ["waiting for the queue at redis://:***@h:1/0 (Error 111 connecting to 127.0.0.1:1. "
                    "Connection refused.), until it answers", "the queue at redis://:***@h:1/0 answers"]


def test_a_bounded_wait_gives_up_with_the_reason_and_zero_tries_once() -> None:
    clock = Clock()

    def sleep(seconds: float) -> None:
        clock.now += seconds

    pinger = _Pinger(1000)
    assert wait_for_broker(pinger, "redis://h:1/0", 5, lambda _: None, sleep, clock) is not None
    assert clock.now - 100 == pytest.approx(5.0)
    once = _Pinger(1000)
    assert "refused" in str(wait_for_broker(once, "redis://h:1/0", 0, lambda _: None, sleep, clock))
    assert once.failures == 999


# ----------------------------------------------------------------------------- a job run through an outage
class _FlakyStore:
    """A stream in memory that fails while `down` is set, and can lose everything (an empty restart)."""

    def __init__(self) -> None:
        self.down = False
        self.stream: list[dict[str, Any]] = []
        self.lease: str | None = "w1"

    def _check(self) -> None:
        if self.down:
            raise DOWN

    def publish_events(self, run_id: str, batch: list[dict[str, Any]]) -> int:
        self._check()
        self.stream.extend(batch)
        return len(batch)

    def last_seq(self, run_id: str) -> int:
        self._check()
        return int(self.stream[-1]["seq"]) if self.stream else 0

    def renew(self, run_id: str, owner: str, ttl_ms: int) -> bool:
        self._check()
        if self.lease in (None, owner):
            self.lease = owner
            return True
        return False

    def lease_owner(self, run_id: str) -> str | None:
        return self.lease

    def restore(self, job: Job) -> None:
        self._check()

    def set_meta(self, run_id: str, **fields: Any) -> None:
        self._check()

    def take_commands(self, run_id: str) -> list[dict[str, Any]]:
        self._check()
        return []


def _flaky_run(tmp_path: Path) -> tuple[JobRun, _FlakyStore, Path]:
    store = _FlakyStore()
    config = WorkerConfig(workspace=tmp_path, worker_id="w1", renew_seconds=3600)
    run = JobRun(store, config, Job("r1", str(tmp_path), "g.md", "# g"))  # type: ignore[arg-type]
    run._state_dirty = False
    run._publish_state = lambda: None  # type: ignore[method-assign]
    file = run.run_dir / "events.jsonl"
    file.parent.mkdir(parents=True)
    file.touch()
    return run, store, file


def _append(file: Path, seqs: range) -> None:
    with file.open("ab") as handle:
        handle.write(b"".join(orjson.dumps(e) + b"\n" for e in events(*seqs)))


def _retry_now(run: JobRun) -> None:
    run.link._retry_at = 0.0


def test_events_written_during_an_outage_reach_the_stream_in_order_once_it_is_back(tmp_path: Path) -> None:
    run, store, file = _flaky_run(tmp_path)
    _append(file, range(1, 4))
    run._tick()
    store.down = True
    _append(file, range(4, 8))
    run._tick()  # fails: nothing is lost, the events stay in the file
    _append(file, range(8, 10))
    run._tick()  # down and not yet time to retry: the file is not even read
    assert not run.link.up and run._follower.offset < file.stat().st_size
    store.down = False
    _retry_now(run)
    run._tick()
    assert [e["seq"] for e in store.stream] == list(range(1, 10))
    run._saver.shutdown()


def test_a_redis_that_came_back_empty_gets_the_whole_stream_again(tmp_path: Path) -> None:
    run, store, file = _flaky_run(tmp_path)
    _append(file, range(1, 6))
    run._tick()
    store.down = True
    run._tick()
    _append(file, range(6, 8))
    store.stream, store.lease, store.down = [], None, False  # restarted without persistence
    _retry_now(run)
    run._tick()
    assert [e["seq"] for e in store.stream] == list(range(1, 8))
    assert store.lease == "w1", "the worker took its expired lease back"
    run._saver.shutdown()


def test_a_batch_whose_reply_was_lost_is_not_published_twice(tmp_path: Path) -> None:
    run, store, file = _flaky_run(tmp_path)
    _append(file, range(1, 4))
    original = store.publish_events

    def lost_reply(run_id: str, batch: list[dict[str, Any]]) -> int:
        original(run_id, batch)
        raise redis.exceptions.TimeoutError("Timeout reading from 127.0.0.1:1")

    store.publish_events = lost_reply  # type: ignore[method-assign]
    run._tick()
    store.publish_events = original  # type: ignore[method-assign]
    _retry_now(run)
    run._tick()
    assert [e["seq"] for e in store.stream] == [1, 2, 3]
    run._saver.shutdown()


def test_a_worker_whose_lease_another_took_publishes_nothing_more(tmp_path: Path) -> None:
    run, store, file = _flaky_run(tmp_path)
    store.down = True
    _append(file, range(1, 3))
    run._tick()
    store.down, store.lease = False, "w2"
    _retry_now(run)
    run._tick()
    assert run._lease_lost and store.stream == []
    run._saver.shutdown()


def test_the_lease_watchdog_stops_the_plan_when_the_lease_could_lapse(tmp_path: Path) -> None:
    run, _store, _file = _flaky_run(tmp_path)
    clock = Clock()
    run.lease = LeaseClock(15_000, 5.0, clock)
    signals: list[int] = []

    class _Process:
        def poll(self) -> None:
            return None

        def send_signal(self, sig: int) -> None:
            signals.append(sig)

    done = threading.Event()
    clock.now += 11
    run._watch_lease(_Process(), done)  # type: ignore[arg-type]
    assert signals and run._lease_ran_out.is_set()
    run._saver.shutdown()


# ----------------------------------------------------------------------------- settling a finished run
class _SettleStore(_FlakyStore):
    def __init__(self) -> None:
        super().__init__()
        self.results: list[dict[str, Any]] = []
        self.finished_by_other = False

    def finished(self, run_id: str) -> bool:
        self._check()
        return self.finished_by_other or bool(self.results)

    def acquire(self, run_id: str, owner: str, ttl_ms: int) -> bool:
        self._check()
        if self.lease is None:
            self.lease = owner
            return True
        return self.lease == owner

    def put_result(self, run_id: str, meta: dict[str, Any], **fields: Any) -> None:
        self._check()
        self.results.append({**meta, **fields})


def _settling(tmp_path: Path) -> tuple[JobRun, _SettleStore, dict[str, Any]]:
    store = _SettleStore()
    run = JobRun(store, WorkerConfig(workspace=tmp_path, worker_id="w1", renew_seconds=3600),  # type: ignore[arg-type]
                 Job("r1", str(tmp_path), "g.md", "# g"))
    run._save_progress = lambda: ("", b"")  # type: ignore[method-assign]
    run.run_dir.mkdir(parents=True)
    (run.run_dir / "events.jsonl").touch()
    record = {"runId": "r1", "status": "done", "exitCode": 0}
    (run.run_dir / RESULT_FILE).write_text(orjson.dumps(record).decode())
    return run, store, record


def test_a_result_waits_out_an_outage_and_is_stored_once(tmp_path: Path) -> None:
    run, store, record = _settling(tmp_path)
    store.down = True
    threading.Timer(0.3, lambda: setattr(store, "down", False)).start()
    assert run._settle(record) == {"runId": "r1", "exitCode": 0, "status": "done"}
    assert len(store.results) == 1 and store.results[0]["worker"] == "w1"
    run._saver.shutdown()


def test_a_run_another_worker_finished_meanwhile_is_dropped_here(tmp_path: Path) -> None:
    run, store, record = _settling(tmp_path)
    store.lease, store.finished_by_other = "w2", True
    run._lease_lost = True
    assert run._settle(record) == {"runId": "r1", "handedOver": True}
    assert store.results == [] and not (run.run_dir / RESULT_FILE).exists()
    run._saver.shutdown()


def test_a_run_whose_lease_another_holds_waits_for_it_then_stores(tmp_path: Path) -> None:
    run, store, record = _settling(tmp_path)
    store.lease = "w2"
    run._lease_lost = True
    threading.Timer(0.5, lambda: setattr(store, "lease", None)).start()  # the other worker died
    assert run._settle(record)["status"] == "done" and len(store.results) == 1
    run._saver.shutdown()
