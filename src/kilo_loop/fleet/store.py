"""What the fleet keeps in Redis, in one place: jobs, each run's event stream, its latest state,
the commands waiting for it, the lease that keeps it from running twice, what a new worker
needs to resume it, its result, and the quota pauses per backend.

Only redacted material goes in: events and state are redacted by the run before they reach
events.jsonl / state.json, and credentials stay in each worker's own environment.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson
import redis
import redis.asyncio

PREFIX = "kilo-loop"
EVENTS_MAXLEN = 100_000
# Renewing also takes back a lease that expired while Redis was away (or came back empty), as long
# as nobody else took it meanwhile: the holder that reconnects first keeps running its job.
_RENEW = """
local owner = redis.call('get', KEYS[1])
if owner == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
if not owner then redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end
return 0
"""
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""


def _key(*parts: str) -> str:
    return ":".join((PREFIX, *parts))


@dataclass(frozen=True)
class Job:
    """A plan to run: the goal's content travels in the job, so a worker needs no shared disk."""

    run_id: str
    repo: str
    goal_name: str
    goal_text: str
    ref: str | None = None
    flags: tuple[str, ...] = ()
    backend: str = "default"
    push_branch: bool = False

    def to_wire(self) -> dict[str, Any]:
        return {"runId": self.run_id, "repo": self.repo, "goalName": self.goal_name, "goalText": self.goal_text,
                "ref": self.ref, "flags": list(self.flags), "backend": self.backend, "pushBranch": self.push_branch}

    @classmethod
    def from_wire(cls, wire: dict[str, Any]) -> Job:
        return cls(run_id=str(wire["runId"]), repo=str(wire["repo"]), goal_name=str(wire["goalName"]),
                   goal_text=str(wire["goalText"]), ref=wire.get("ref"), flags=tuple(wire.get("flags") or ()),
                   backend=str(wire.get("backend") or "default"), push_branch=bool(wire.get("pushBranch")))


class FleetStore:
    def __init__(self, client: redis.Redis, url: str = "") -> None:
        # redis-py types every reply as a union over its sync/async and decode modes; this client is
        # sync and returns bytes, so it is used as Any rather than narrowed at every call.
        self.client: Any = client
        self.url = url
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)

    @classmethod
    def from_url(cls, url: str) -> FleetStore:
        from kilo_loop.fleet.connection import redis_client

        return cls(redis_client(url), url)

    # ------------------------------------------------------------ epoch
    def epoch(self) -> str | None:
        """This Redis's fleet epoch: set once by the first fleet process that reaches it, gone when
        Redis comes back empty (no persistence, a flush) — so a changed epoch means lost jobs."""
        raw = self.client.get(_key("epoch"))
        return raw.decode() if raw else None

    def ensure_epoch(self) -> str:
        self.client.set(_key("epoch"), uuid.uuid4().hex, nx=True)
        return self.epoch() or ""

    # ------------------------------------------------------------ jobs and runs
    def register(self, job: Job) -> None:
        pipe = self.client.pipeline()
        pipe.set(_key("epoch"), uuid.uuid4().hex, nx=True)
        pipe.hset(_key("job", job.run_id), mapping={"job": orjson.dumps(job.to_wire())})
        pipe.zadd(_key("runs"), {job.run_id: time.time()})
        pipe.hset(_key("run", job.run_id, "meta"), mapping={"status": "queued", "backend": job.backend,
                                                          "title": job.goal_name, "updatedAt": time.time()})
        pipe.execute()

    def restore(self, job: Job) -> None:
        """Put back a job's record after Redis lost it, without overwriting what is still there."""
        pipe = self.client.pipeline()
        pipe.hsetnx(_key("job", job.run_id), "job", orjson.dumps(job.to_wire()))
        pipe.zadd(_key("runs"), {job.run_id: time.time()}, nx=True)
        for name, value in (("status", "queued"), ("backend", job.backend), ("title", job.goal_name)):
            pipe.hsetnx(_key("run", job.run_id, "meta"), name, value)
        pipe.execute()

    def job(self, run_id: str) -> Job | None:
        raw = self.client.hget(_key("job", run_id), "job")
        return Job.from_wire(orjson.loads(raw)) if raw else None

    def run_ids(self) -> list[str]:
        return [raw.decode() for raw in self.client.zrange(_key("runs"), 0, -1)]

    def set_meta(self, run_id: str, **fields: Any) -> None:
        values = {k: orjson.dumps(v).decode() if isinstance(v, (dict, list)) else v for k, v in fields.items()}
        self.client.hset(_key("run", run_id, "meta"), mapping={**values, "updatedAt": time.time()})

    def meta(self, run_id: str) -> dict[str, str]:
        raw = self.client.hgetall(_key("run", run_id, "meta"))
        return {k.decode(): v.decode() for k, v in raw.items()}

    # ------------------------------------------------------------ events and state
    def publish_events(self, run_id: str, events: Iterable[dict[str, Any]]) -> int:
        pipe = self.client.pipeline()
        count = 0
        for event in events:
            pipe.xadd(_key("run", run_id, "events"), {"e": orjson.dumps(event)}, maxlen=EVENTS_MAXLEN,
                      approximate=True)
            count += 1
        if count:
            pipe.execute()
        return count

    def events_after(self, run_id: str, stream_id: str = "0", block_ms: int | None = None,
                     count: int = 500) -> list[tuple[str, dict[str, Any]]]:
        reply = self.client.xread({_key("run", run_id, "events"): stream_id}, count=count, block=block_ms)
        return _stream_entries(reply)

    def drop_events(self, run_id: str) -> None:
        self.client.delete(_key("run", run_id, "events"))

    def last_seq(self, run_id: str) -> int:
        last = self.client.xrevrange(_key("run", run_id, "events"), count=1)
        return int(orjson.loads(last[0][1][b"e"]).get("seq", 0)) if last else 0

    def put_state(self, run_id: str, state_json: bytes) -> None:
        self.client.set(_key("run", run_id, "state"), state_json)

    def state(self, run_id: str) -> dict[str, Any] | None:
        raw = self.client.get(_key("run", run_id, "state"))
        return orjson.loads(raw) if raw else None

    # ------------------------------------------------------------ resume material
    def put_resume(self, run_id: str, base: str, tree_patch: bytes, run_archive: bytes) -> None:
        self.client.hset(_key("run", run_id, "resume"),
                         mapping={"base": base, "tree": tree_patch, "archive": run_archive, "at": time.time()})

    def resume_material(self, run_id: str) -> dict[str, bytes] | None:
        raw = self.client.hgetall(_key("run", run_id, "resume"))
        return {k.decode(): v for k, v in raw.items()} if raw else None

    # ------------------------------------------------------------ commands
    def send_command(self, run_id: str, command: dict[str, Any]) -> None:
        self.client.rpush(_key("run", run_id, "commands"), orjson.dumps(command))

    def take_commands(self, run_id: str) -> list[dict[str, Any]]:
        key = _key("run", run_id, "commands")
        pipe = self.client.pipeline()
        pipe.lrange(key, 0, -1)
        pipe.delete(key)
        raw, _ = pipe.execute()
        return [orjson.loads(item) for item in raw]

    # ------------------------------------------------------------ lease
    def acquire(self, run_id: str, owner: str, ttl_ms: int) -> bool:
        return bool(self.client.set(_key("lease", run_id), owner, nx=True, px=ttl_ms))

    def renew(self, run_id: str, owner: str, ttl_ms: int) -> bool:
        return bool(self._renew(keys=[_key("lease", run_id)], args=[owner, ttl_ms]))

    def release(self, run_id: str, owner: str) -> None:
        self._release(keys=[_key("lease", run_id)], args=[owner])

    def lease_owner(self, run_id: str) -> str | None:
        raw = self.client.get(_key("lease", run_id))
        return raw.decode() if raw else None

    # ------------------------------------------------------------ results
    def put_result(self, run_id: str, meta: dict[str, Any], **fields: bytes | str | int) -> None:
        """The result and the run's final status in one transaction: the fleet view never shows a
        stored result with a live status, nor a final status without its result. `stored` counts the
        results stored for the run: 1 for a job that ran exactly once in effect."""
        pipe = self.client.pipeline(transaction=True)
        pipe.hset(_key("result", run_id), mapping=fields)
        pipe.hincrby(_key("result", run_id), "stored", 1)
        pipe.hset(_key("run", run_id, "meta"), mapping={**meta, "updatedAt": time.time()})
        pipe.execute()

    def finished(self, run_id: str) -> bool:
        return bool(self.client.hexists(_key("result", run_id), "status"))

    def finished_many(self, run_ids: list[str]) -> list[bool]:
        pipe = self.client.pipeline(transaction=False)
        for run_id in run_ids:
            pipe.hexists(_key("result", run_id), "status")
        return [bool(done) for done in pipe.execute()] if run_ids else []

    def result_status(self, run_id: str) -> str | None:
        raw = self.client.hget(_key("result", run_id), "status")
        return raw.decode() if raw else None

    def result(self, run_id: str) -> dict[str, bytes]:
        return {k.decode(): v for k, v in self.client.hgetall(_key("result", run_id)).items()}

    # ------------------------------------------------------------ quota
    def pause_backend(self, backend: str, until_epoch: float) -> None:
        key = _key("quota", backend)
        current = self.client.get(key)
        if current is None or float(current) < until_epoch:
            self.client.set(key, until_epoch, exat=int(until_epoch) + 1)

    def backend_paused_until(self, backend: str) -> float | None:
        raw = self.client.get(_key("quota", backend))
        until = float(raw) if raw else None
        return until if until is not None and until > time.time() else None

    def paused_backends(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for key in self.client.scan_iter(_key("quota", "*")):
            backend = key.decode().rsplit(":", 1)[-1]
            until = self.backend_paused_until(backend)
            if until is not None:
                out[backend] = until
        return out


class AsyncEventReader:
    """Blocking reads of runs' event streams for a dashboard's event loop. One connection per
    waiting reader from an asyncio pool: a thread per waiting SSE client would queue clients behind
    the loop's few default-executor threads, each blocked for up to a second."""

    def __init__(self, url: str) -> None:
        self.client: Any = redis.asyncio.Redis.from_url(url)

    async def events_after(self, run_id: str, stream_id: str, block_ms: int,
                           count: int = 500) -> list[tuple[str, dict[str, Any]]]:
        reply = await self.client.xread({_key("run", run_id, "events"): stream_id}, count=count, block=block_ms)
        return _stream_entries(reply)

    async def close(self) -> None:
        await self.client.aclose()


def _stream_entries(reply: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(entry_id.decode(), orjson.loads(fields[b"e"])) for _stream, entries in reply or []
            for entry_id, fields in entries]
