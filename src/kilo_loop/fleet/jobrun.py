"""One fleet job on a worker: take the lease, clone (or restore) the repository into the worker's
own workspace, run the plan as a `kilo-loop` process, and keep Redis up to date while it runs —
its events, its state, what another worker needs to resume it, the commands sent to it — then
store the result (patch, report, run archive) or push the plan's branch.

Redis may go away at any moment (killed, restarted, frozen, unreachable). The plan keeps running;
its events wait in its own events.jsonl and are replayed in order, each once, when Redis answers
(fleet/replay.py). The lease stops the plan before another worker could take it over (fleet/lease.py).
The result is written into the run directory before it is stored in Redis, so a job that ended
during an outage is reported when Redis returns — by this worker, or by the next one given the job
on this workspace — instead of being lost or run again.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import socket
import subprocess
import sys
import tarfile
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import orjson

from kilo_loop.fleet.child import INBOX_ENV, child_argv, die_with_parent
from kilo_loop.fleet.connection import OUTAGE_ERRORS
from kilo_loop.fleet.inbox import append_command, parse_command
from kilo_loop.fleet.lease import LeaseClock
from kilo_loop.fleet.link import Link
from kilo_loop.fleet.quota import quota_pause
from kilo_loop.fleet.replay import lost_from_stream, not_in_stream, seq
from kilo_loop.fleet.store import FleetStore, Job
from kilo_loop.fleet.tail import LineFollower
from kilo_loop.fleet.worktree import BRANCH_PREFIX, WorktreeError, git, snapshot_commit, tree_diff
from kilo_loop.git import git_output
from kilo_loop.run.files import read_json, write_json_atomic
from kilo_loop.run.layout import LOOP_DIR

TICK_SECONDS = 0.05
RESULT_FILE = "fleet-result.json"  # in the run directory: the run's end, whether or not Redis heard of it
LEASE_MARGIN = 5.0  # seconds before the lease could expire in Redis that a cut-off worker stops its plan
T = TypeVar("T")
_STATUS_EVENTS = {"status", "run-finished"}
# After these the fleet view's copy of state.json is refreshed (questions, answers, stages, status).
_STATE_EVENTS = {"question", "answer", "status", "stage-done", "run-finished", "iteration-started"}


# Set when the worker shuts down: running plans stop (resumable) and their jobs go back on the queue.
SHUTDOWN = threading.Event()


class LeaseBusy(RuntimeError):
    """Another worker holds this run; the job goes back on the queue, delayed (never run twice at once)."""


@dataclass(frozen=True)
class WorkerConfig:
    workspace: Path
    worker_id: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}")
    lease_ms: int = 15_000
    renew_seconds: float = 3.0


class JobRun:
    def __init__(self, store: FleetStore, config: WorkerConfig, job: Job,
                 requeue: Callable[[], None] | None = None) -> None:
        self.store, self.config, self.job = store, config, job
        self.root = config.workspace / job.run_id
        self.run_dir = self.root / LOOP_DIR / "runs" / job.run_id
        self._requeue = requeue
        self._base = ""
        self._renewed = time.monotonic()
        # Events read from the run but not yet published: an `iteration-finished` waits here until
        # the progress save it asked for is stored, the events before it go out at once.
        self._held: list[dict[str, Any]] = []
        self._saver = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"save-{job.run_id}")
        self._saving: Future[tuple[str, bytes]] | None = None
        self.link = Link(self._say)
        self.lease = LeaseClock(config.lease_ms, min(LEASE_MARGIN, config.lease_ms / 3000))
        self._published = 0  # the highest sequence number this worker put in the run's stream
        self._stream_checked = True  # False after an outage: the stream may have lost events
        self._state_dirty = False
        self._lease_lost = False  # another worker took the lease: this one lets the job go
        self._lease_ran_out = threading.Event()  # the plan was stopped because the lease could expire
        self._follower = LineFollower(self.run_dir / "events.jsonl")

    def _say(self, text: str) -> None:
        print(f"kilo-loop worker {self.config.worker_id}: run {self.job.run_id}: {text}", file=sys.stderr, flush=True)

    # ------------------------------------------------------------ whole job
    def run(self) -> dict[str, Any]:
        self._until_up(self._take_lease)
        try:
            resumed = self._until_up(self._prepare)
            record = read_json(self.run_dir / RESULT_FILE) if (self.run_dir / RESULT_FILE).is_file() else None
            if isinstance(record, dict):
                self._say(f"the run had ended ({RESULT_FILE} in its run directory) before Redis stored its "
                          "result: storing it now")
                return self._settle(record)
            self._until_up(lambda: self.store.set_meta(self.job.run_id, status="running",
                                                       worker=self.config.worker_id, resumed=int(resumed)))
            exit_code = self._supervise(resumed)
            if SHUTDOWN.is_set():
                return self._hand_back()
            if exit_code is None:
                self._say("another worker holds the run now: this worker lets it go")
                return {"runId": self.job.run_id, "handedOver": True}
            return self._settle(self._record(exit_code))
        finally:
            self._saver.shutdown(wait=True)
            with contextlib.suppress(*OUTAGE_ERRORS):
                self.store.release(self.job.run_id, self.config.worker_id)

    def _until_up(self, step: Callable[[], T]) -> T:
        """`step()`, tried again for as long as Redis is away: a worker gives no job up for an outage."""
        while True:
            try:
                value = step()
            except OUTAGE_ERRORS as exc:
                self.link.lost(exc)
                time.sleep(max(0.05, self.link.wait_seconds()))
                continue
            if not self.link.up:
                self._say(f"the queue answers again after {self.link.restored():.1f} s")
            return value

    def _take_lease(self) -> None:
        deadline = time.monotonic() + self.config.lease_ms / 1000 + 1
        sent = time.monotonic()
        while not self.store.acquire(self.job.run_id, self.config.worker_id, self.config.lease_ms):
            if time.monotonic() > deadline:
                raise LeaseBusy(f"run {self.job.run_id} is held by {self.store.lease_owner(self.job.run_id)}")
            time.sleep(0.2)
            sent = time.monotonic()
        self.lease.renewed(sent)
        self._renewed = sent

    def _hand_back(self) -> dict[str, Any]:
        """The worker is stopping: the plan stopped resumably; its progress and the job go back to
        Redis (a new copy on the queue, then this one is acknowledged), waiting for Redis if need be."""
        self._guarded(self._save_progress)
        self._guarded(lambda: self.store.set_meta(self.job.run_id, status="requeued"))
        if self._requeue is not None:
            self._until_up(self._requeue)
        return {"runId": self.job.run_id, "requeued": True}

    # ------------------------------------------------------------ workspace
    def _prepare(self) -> bool:
        material = self.store.resume_material(self.job.run_id)
        if not (self.root / ".git").exists():
            self._clone(material)
        else:
            # This workspace ran the job before (the worker was restarted): events it wrote while
            # the stream did not get them go out now.
            self._base = (self.root / ".git" / "kilo-loop-base").read_text().strip()
            self._append_missing_events()
        self._published = self.store.last_seq(self.job.run_id)
        resumed = (self.run_dir / "state.json").is_file()
        if self._published and not resumed:
            # An attempt that died before its first save left events but nothing to resume from: this
            # run starts over from the repository, so its stream does too (one run, numbered from 1).
            self.store.drop_events(self.job.run_id)
            self._published = 0
        events = self.run_dir / "events.jsonl"
        self._follower = LineFollower(events, events.stat().st_size if events.exists() else 0)
        goal = self._goal_path()
        goal.parent.mkdir(parents=True, exist_ok=True)
        goal.write_text(self.job.goal_text, encoding="utf-8")
        return resumed

    def _clone(self, material: dict[str, bytes] | None) -> None:
        self.root.parent.mkdir(parents=True, exist_ok=True)
        git(self.root.parent, "clone", "-q", "--no-hardlinks", self.job.repo, str(self.root))
        start = material["base"].decode() if material else (self.job.ref or "HEAD")
        git(self.root, "checkout", "-q", "--detach", start)
        git(self.root, "checkout", "-q", "-b", BRANCH_PREFIX + self.job.run_id)
        self._base = git(self.root, "rev-parse", "HEAD").strip()
        (self.root / ".git" / "kilo-loop-base").write_text(self._base + "\n")
        if material:
            self._restore(material)

    def _restore(self, material: dict[str, bytes]) -> None:
        """The tree and run directory as the last worker left them, plus every event that reached
        Redis after that: the same position a `kill -9` and `--resume` would start from."""
        tree = material.get("tree", b"")
        if tree.strip():
            git_output(self.root, "apply", "--binary", "-", stdin=tree, what="restoring the run's tree")
        with tarfile.open(fileobj=io.BytesIO(material["archive"]), mode="r:gz") as archive:
            archive.extractall(self.root, filter="data")
        self._append_missing_events()

    def _append_missing_events(self) -> None:
        """Make the local events.jsonl and the Redis stream hold the same events: those that
        reached Redis after the archive go into the file, those in the archive that never reached
        Redis go into the stream — so the resumed run's sequence numbers continue both."""
        events = self.run_dir / "events.jsonl"
        local = LineFollower(events).read_new() if events.exists() else []
        local_last = max((int(e.get("seq", 0)) for e in local), default=0)
        published = [e for _, e in self.store.events_after(self.job.run_id, count=1_000_000)]
        published_last = max((int(e.get("seq", 0)) for e in published), default=0)
        missing_here = [e for e in published if int(e.get("seq", 0)) > local_last]
        if missing_here:
            events.parent.mkdir(parents=True, exist_ok=True)
            with events.open("ab") as handle:
                handle.write(b"".join(orjson.dumps(e) + b"\n" for e in missing_here))
        self.store.publish_events(self.job.run_id, [e for e in local if int(e.get("seq", 0)) > published_last])

    def _goal_path(self) -> Path:
        name = Path(self.job.goal_name).name or "goal.md"
        return self.config.workspace / f"{self.job.run_id}.goal" / name

    # ------------------------------------------------------------ the plan's process
    def _supervise(self, resumed: bool) -> int | None:
        """The plan's exit code; None when the job is no longer this worker's (another worker took
        the lease) or the worker is stopping. A plan stopped because the lease could expire during an
        outage resumes here once this worker has the lease back."""
        while True:
            exit_code, stopped = self._run_plan(resumed)
            if not (stopped or self._lease_ran_out.is_set()):
                return exit_code  # the plan ended by itself: its result counts, even if the worker is stopping
            if SHUTDOWN.is_set() or self._lease_lost:
                return None
            self._lease_ran_out.clear()
            if not self._lease_back():
                return None
            self._say("the lease is this worker's again: the plan resumes")
            resumed = True

    def _run_plan(self, resumed: bool) -> tuple[int, bool]:
        """The plan's exit code, and whether this worker stopped it (shutting down, or the lease gone)."""
        argv = child_argv(str(self._goal_path()), self.root, self.job.run_id, self.job.flags, resume=resumed)
        env = {**os.environ, INBOX_ENV: "1", "PWD": str(self.root)}
        log = (self.config.workspace / f"{self.job.run_id}.log").open("ab")
        done = threading.Event()
        stopped = False
        with log:
            process = subprocess.Popen(argv, cwd=self.root, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                       stderr=log, preexec_fn=die_with_parent)
            watchdog = threading.Thread(target=self._watch_lease, args=(process, done), daemon=True,
                                        name=f"lease-{self.job.run_id}")
            watchdog.start()
            try:
                while process.poll() is None:
                    self._tick()
                    if SHUTDOWN.is_set() or self._lease_lost:
                        stopped = True
                        process.send_signal(signal.SIGINT)  # the run stops and saves, resumable
                        process.wait(60)
                        break
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        process.wait(TICK_SECONDS)  # returns as soon as the run ends
            finally:
                done.set()
                if process.poll() is None:
                    process.terminate()
                    process.wait(30)
                watchdog.join()
        if not self._lease_lost:
            self._tick()
        return process.returncode, stopped

    def _watch_lease(self, process: subprocess.Popen[bytes], done: threading.Event) -> None:
        """Apart from the ticks, which a frozen Redis can hold up for seconds: stop the plan (resumable)
        before the lease could expire in Redis and another worker start the same job."""
        while not done.wait(0.25):
            if self.lease.expired() and process.poll() is None:
                self._lease_ran_out.set()
                self._say("the lease could run out while the queue is away: the plan stops (resumable) so "
                          "that no other worker runs it at the same time")
                process.send_signal(signal.SIGINT)
                return

    def _lease_back(self) -> bool:
        """Wait for Redis and the lease: True when this worker holds it again, False when another does."""
        while not self._guarded(self._renew):
            time.sleep(max(0.05, self.link.wait_seconds()))
        return not self._lease_lost

    def _guarded(self, step: Callable[[], Any]) -> bool:
        """Run `step` against Redis unless Redis is away; False when it is (then or now). The first
        call after an outage puts the job's record back and takes the lease back before the step."""
        if not self.link.up:
            if not self.link.due():
                return False
            try:
                self._resync()
            except OUTAGE_ERRORS as exc:
                self.link.lost(exc)
                return False
            self._say(f"the queue answers again after {self.link.restored():.1f} s")
        try:
            step()
        except OUTAGE_ERRORS as exc:
            self.link.lost(exc)
            self._stream_checked = False
            return False
        return True

    def _resync(self) -> None:
        self.store.restore(self.job)  # Redis may have come back empty
        self._renew()
        self._stream_checked = False
        self._state_dirty = True

    def _renew(self) -> None:
        sent = time.monotonic()
        if self.store.renew(self.job.run_id, self.config.worker_id, self.config.lease_ms):
            self.lease.renewed(sent)
            self._renewed = sent
        elif not self._lease_lost:
            self._lease_lost = True
            self._say(f"the lease is held by {self.store.lease_owner(self.job.run_id)}")

    def _catch_up(self) -> None:
        """After an outage, make the stream whole before anything new goes in: what it lost comes back
        from events.jsonl, what it holds already is not sent twice."""
        if self._stream_checked:
            return
        last = self.store.last_seq(self.job.run_id)
        replayed = 0
        for batch in lost_from_stream(self._follower.path, last, self._published):
            self._publish(batch)
            replayed += len(batch)
        self._held = not_in_stream(self._held, last)
        self._stream_checked = True
        if replayed:
            self._say(f"{replayed} events the queue had lost were published again from events.jsonl")

    def _tick(self) -> None:
        self._guarded(self._exchange)

    def _exchange(self) -> None:
        if self._lease_lost:
            return  # the job is another worker's: nothing more goes out from here
        self._catch_up()
        events = self._follower.read_new()
        self._held.extend(events)
        self._state_dirty |= any(event.get("type") in _STATE_EVENTS for event in events)
        self._publish_held(wait=False)
        if self._state_dirty:
            self._publish_state()
            self._state_dirty = False
        self._deliver_commands()
        if time.monotonic() - self._renewed > self.config.renew_seconds:
            self._renew()

    def _publish(self, events: list[dict[str, Any]]) -> None:
        if not events:
            return
        self.store.publish_events(self.job.run_id, events)
        self._published = max(self._published, max(seq(event) for event in events))
        for event in events:
            self._on_event(event)

    def _publish_held(self, wait: bool) -> None:
        """Publish what was read, in order. An `iteration-finished` goes out only once a progress save
        started after it is stored: whoever sees an iteration finished in the fleet view can count on
        another worker resuming from at least that iteration. The save runs in the background so
        the events of the next iteration are not held up by git and the archive."""
        while self._held:
            cut = next((i for i, e in enumerate(self._held) if e.get("type") == "iteration-finished"), None)
            ready, rest = (self._held, []) if cut is None else (self._held[:cut], self._held[cut:])
            self._publish(ready)
            self._held = rest
            if cut is None:
                return
            if self._saving is None:
                self._saving = self._saver.submit(self._save_progress)
            if not (wait or self._saving.done()):
                return
            saving, self._saving = self._saving, None
            saving.result()  # a save that met an outage raises here, and is made again after it
            self._publish(self._held[:1])
            self._held = self._held[1:]

    def _on_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind in _STATUS_EVENTS:
            status = (event.get("data") or {}).get("status")
            if status:
                self.store.set_meta(self.job.run_id, status=status)
        pause = quota_pause(event)
        if pause is not None:
            self.store.pause_backend(self.job.backend, pause)
            self.store.set_meta(self.job.run_id, quotaUntil=pause)

    def _deliver_commands(self) -> None:
        for record in self.store.take_commands(self.job.run_id):
            try:
                append_command(self.run_dir, parse_command(record))
            except (ValueError, TypeError):
                continue  # the fleet API validates; a bad record here is dropped, never fatal

    # ------------------------------------------------------------ progress and result
    def _publish_state(self) -> None:
        state = self.run_dir / "state.json"
        if state.is_file():
            raw = state.read_bytes()
            self.store.put_state(self.job.run_id, raw)
            self._meta_from_state(raw)

    def _save_progress(self) -> tuple[str, bytes]:
        """State, tree and run directory as another worker would resume from them; returned for reuse."""
        self._publish_state()
        patch, archive = self._tree_patch(), self._archive()
        self.store.put_resume(self.job.run_id, self._base, patch.encode(), archive)
        return patch, archive

    def _meta_from_state(self, raw: bytes) -> None:
        try:
            state = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return
        stages = state.get("stages") or []
        self.store.set_meta(self.job.run_id, title=state.get("goalTitle", self.job.goal_name),
                            status=state.get("status", "running"), iteration=state.get("iteration", 0),
                            stagesDone=sum(1 for s in stages if s.get("status") == "done"),
                            stagesTotal=len(stages), cost=(state.get("totals") or {}).get("cost", 0.0),
                            runtime=state.get("runtime", ""))

    def _tree_patch(self) -> str:
        return tree_diff(self.root, self._base)

    def _archive(self) -> bytes:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=3) as archive:
            archive.add(self.root / LOOP_DIR, arcname=LOOP_DIR,
                        filter=lambda info: None if "/worktrees" in info.name else info)
        return buffer.getvalue()

    def _record(self, exit_code: int) -> dict[str, Any]:
        """The run's end, written into its run directory before Redis is told."""
        state = read_json(self.run_dir / "state.json") if (self.run_dir / "state.json").is_file() else None
        status = str((state or {}).get("status") or f"exited {exit_code}")
        record: dict[str, Any] = {"runId": self.job.run_id, "status": status, "exitCode": exit_code,
                                  "worker": self.config.worker_id, "finishedAt": time.time()}
        if self.job.push_branch:
            record["pushed"] = self._push_branch()
        write_json_atomic(self.run_dir / RESULT_FILE, record)
        return record

    def _settle(self, record: dict[str, Any]) -> dict[str, Any]:
        """The rest of the run's events, its state and its result into Redis, waiting for Redis as long
        as it takes (the result is safe in the run directory meanwhile). A job whose lease another
        worker took meanwhile is that worker's: its result counts, this one is dropped."""
        outcome: dict[str, str] = {}

        def attempt() -> None:
            outcome["done"] = self._try_settle(record)

        while True:
            outcome.clear()
            if self._guarded(attempt) and outcome["done"] == "stored":
                return {"runId": self.job.run_id, "exitCode": record["exitCode"], "status": record["status"]}
            if outcome.get("done") == "taken":
                (self.run_dir / RESULT_FILE).unlink(missing_ok=True)
                self._say("another worker stored this run's result: this worker's is dropped")
                return {"runId": self.job.run_id, "handedOver": True}
            time.sleep(max(0.2, self.link.wait_seconds()))

    def _try_settle(self, record: dict[str, Any]) -> str:
        if self.store.finished(self.job.run_id):
            return "taken"
        if self._lease_lost:
            sent = time.monotonic()
            if not self.store.acquire(self.job.run_id, self.config.worker_id, self.config.lease_ms):
                return "busy"  # another worker runs it: wait until it stores its result or lets go
            self._lease_lost = False
            self.lease.renewed(sent)
        else:
            self._renew()
            if self._lease_lost:
                return "busy"
        self._catch_up()
        self._held.extend(self._follower.read_new())
        self._publish_held(wait=True)
        patch, archive = self._save_progress()
        report = self.run_dir / "report.md"
        fields: dict[str, bytes | str | int] = {
            "exitCode": int(record["exitCode"]), "status": str(record["status"]), "patch": patch,
            "report": report.read_text(encoding="utf-8") if report.is_file() else "", "archive": archive,
            "worker": self.config.worker_id,
        }
        if "pushed" in record:
            fields["pushed"] = str(record["pushed"])
        self.store.put_result(self.job.run_id, {"status": str(record["status"]), "exitCode": int(record["exitCode"]),
                                                "finished": 1}, **fields)
        return "stored"

    def _push_branch(self) -> str:
        branch = BRANCH_PREFIX + self.job.run_id
        commit = snapshot_commit(self.root, self._base, f"kilo-loop: result of {self.job.run_id}")
        git(self.root, "update-ref", f"refs/heads/{branch}", commit)
        try:
            git(self.root, "push", "-q", "origin", f"{branch}:refs/heads/{branch}")
        except WorktreeError as exc:
            return f"push failed: {exc}"
        return branch


def run_job(store: FleetStore, config: WorkerConfig, job: Job,
            requeue: Callable[[], None] | None = None) -> dict[str, Any]:
    return JobRun(store, config, job, requeue).run()
