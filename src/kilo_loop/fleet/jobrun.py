"""One fleet job on a worker: take the lease, clone (or restore) the repository into the worker's
own workspace, run the plan as a `kilo-loop` process, and keep Redis up to date while it runs —
its events, its state, what another worker needs to resume it, the commands sent to it — then
store the result (patch, report, run archive) or push the plan's branch.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import socket
import subprocess
import tarfile
import threading
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from kilo_loop.fleet.child import INBOX_ENV, child_argv, die_with_parent
from kilo_loop.fleet.inbox import append_command, parse_command
from kilo_loop.fleet.quota import quota_pause
from kilo_loop.fleet.store import FleetStore, Job
from kilo_loop.fleet.tail import LineFollower
from kilo_loop.fleet.worktree import BRANCH_PREFIX, WorktreeError, git, snapshot_commit, tree_diff
from kilo_loop.git import git_output
from kilo_loop.run.layout import LOOP_DIR

TICK_SECONDS = 0.05
_STATUS_EVENTS = {"status", "run-finished"}
# After these the fleet view's copy of state.json is refreshed (questions, answers, stages, status).
_STATE_EVENTS = {"question", "answer", "status", "stage-done", "run-finished", "iteration-started"}


# Set when the worker shuts down: running plans stop (resumable) and their jobs go back on the queue.
SHUTDOWN = threading.Event()


class Interrupted(RuntimeError):
    """The worker stopped mid-run; raising lets Dramatiq retry the job, which resumes elsewhere."""


class LeaseBusy(RuntimeError):
    """Another worker holds this run; the job is retried later (never run twice at once)."""


@dataclass(frozen=True)
class WorkerConfig:
    workspace: Path
    worker_id: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}")
    lease_ms: int = 15_000
    renew_seconds: float = 3.0


class JobRun:
    def __init__(self, store: FleetStore, config: WorkerConfig, job: Job) -> None:
        self.store, self.config, self.job = store, config, job
        self.root = config.workspace / job.run_id
        self.run_dir = self.root / LOOP_DIR / "runs" / job.run_id
        self._base = ""
        self._renewed = time.monotonic()
        # Events read from the run but not yet published: an `iteration-finished` waits here until
        # the progress save it asked for is stored, the events before it go out at once.
        self._held: list[dict[str, Any]] = []
        self._saver = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"save-{job.run_id}")
        self._saving: Future[tuple[str, bytes]] | None = None

    # ------------------------------------------------------------ whole job
    def run(self) -> dict[str, Any]:
        self._take_lease()
        try:
            resumed = self._prepare()
            self.store.set_meta(self.job.run_id, status="running", worker=self.config.worker_id,
                                resumed=int(resumed))
            exit_code = self._supervise(resumed)
            if SHUTDOWN.is_set():
                self._save_progress()
                self.store.set_meta(self.job.run_id, status="requeued")
                raise Interrupted(f"worker {self.config.worker_id} stopped; run {self.job.run_id} will resume")
            return self._finish(exit_code)
        finally:
            self._saver.shutdown(wait=True)
            self.store.release(self.job.run_id, self.config.worker_id)

    def _take_lease(self) -> None:
        deadline = time.monotonic() + 2 * self.config.lease_ms / 1000
        while not self.store.acquire(self.job.run_id, self.config.worker_id, self.config.lease_ms):
            if time.monotonic() > deadline:
                raise LeaseBusy(f"run {self.job.run_id} is held by {self.store.lease_owner(self.job.run_id)}")
            time.sleep(0.2)

    # ------------------------------------------------------------ workspace
    def _prepare(self) -> bool:
        material = self.store.resume_material(self.job.run_id)
        if not (self.root / ".git").exists():
            self._clone(material)
        else:
            self._base = (self.root / ".git" / "kilo-loop-base").read_text().strip()
        goal = self._goal_path()
        goal.parent.mkdir(parents=True, exist_ok=True)
        goal.write_text(self.job.goal_text, encoding="utf-8")
        return (self.run_dir / "state.json").is_file()

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
    def _supervise(self, resumed: bool) -> int:
        argv = child_argv(str(self._goal_path()), self.root, self.job.run_id, self.job.flags, resume=resumed)
        env = {**os.environ, INBOX_ENV: "1", "PWD": str(self.root)}
        events = self.run_dir / "events.jsonl"
        follower = LineFollower(events, events.stat().st_size if events.exists() else 0)
        log = (self.config.workspace / f"{self.job.run_id}.log").open("ab")
        with log:
            process = subprocess.Popen(argv, cwd=self.root, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                       stderr=log, preexec_fn=die_with_parent)
            try:
                while process.poll() is None:
                    self._tick(follower)
                    if SHUTDOWN.is_set():
                        process.send_signal(signal.SIGINT)  # the run stops and saves, resumable
                        process.wait(60)
                        break
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        process.wait(TICK_SECONDS)  # returns as soon as the run ends
            finally:
                if process.poll() is None:
                    process.terminate()
                    process.wait(30)
            self._tick(follower)
            self._publish_held(wait=True)
        return process.returncode

    def _tick(self, follower: LineFollower) -> None:
        events = follower.read_new()
        for event in events:
            self._on_event(event)
        self._held.extend(events)
        self._publish_held(wait=False)
        if any(event.get("type") in _STATE_EVENTS for event in events):
            self._publish_state()
        self._deliver_commands()
        if time.monotonic() - self._renewed > self.config.renew_seconds:
            self.store.renew(self.job.run_id, self.config.worker_id, self.config.lease_ms)
            self._renewed = time.monotonic()

    def _publish_held(self, wait: bool) -> None:
        """Publish what was read, in order. An `iteration-finished` goes out only once a progress save
        started after it is stored: whoever sees an iteration finished in the fleet view can count on
        another worker resuming from at least that iteration. The save runs in the background so
        the events of the next iteration are not held up by git and the archive."""
        while self._held:
            cut = next((i for i, e in enumerate(self._held) if e.get("type") == "iteration-finished"), None)
            ready, self._held = (self._held, []) if cut is None else (self._held[:cut], self._held[cut:])
            self.store.publish_events(self.job.run_id, ready)
            if cut is None:
                return
            if self._saving is None:
                self._saving = self._saver.submit(self._save_progress)
            if not (wait or self._saving.done()):
                return
            self._saving.result()
            self._saving = None
            self.store.publish_events(self.job.run_id, self._held[:1])
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

    def _finish(self, exit_code: int) -> dict[str, Any]:
        patch, archive = self._save_progress()
        report = self.run_dir / "report.md"
        state = self.store.state(self.job.run_id) or {}
        status = str(state.get("status", f"exited {exit_code}"))
        fields: dict[str, bytes | str | int] = {
            "exitCode": exit_code, "status": status, "patch": patch,
            "report": report.read_text(encoding="utf-8") if report.is_file() else "", "archive": archive,
        }
        if self.job.push_branch:
            fields["pushed"] = self._push_branch()
        self.store.put_result(self.job.run_id, **fields)
        self.store.set_meta(self.job.run_id, status=status, exitCode=exit_code, finished=1)
        return {"runId": self.job.run_id, "exitCode": exit_code, "status": status}

    def _push_branch(self) -> str:
        branch = BRANCH_PREFIX + self.job.run_id
        commit = snapshot_commit(self.root, self._base, f"kilo-loop: result of {self.job.run_id}")
        git(self.root, "update-ref", f"refs/heads/{branch}", commit)
        try:
            git(self.root, "push", "-q", "origin", f"{branch}:refs/heads/{branch}")
        except WorktreeError as exc:
            return f"push failed: {exc}"
        return branch


def run_job(store: FleetStore, config: WorkerConfig, job: Job) -> dict[str, Any]:
    return JobRun(store, config, job).run()
