"""`kilo-loop worker`, `kilo-loop submit` and `kilo-loop fleet`: plans on a queue, run by workers
anywhere that reach the same Redis, watched and answered from one dashboard."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import click
from click.core import ParameterSource

from kilo_loop.fleet.connection import masked

if TYPE_CHECKING:
    from kilo_loop.fleet.keeper import FleetKeeper
    from kilo_loop.fleet.serve import FleetDashboard

BROKER_HELP = "Redis URL of the queue (redis://host:port/db); also KILO_LOOP_BROKER"
BROKER_SCHEMES = ("redis", "rediss", "unix")


def broker_url(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--broker as Redis will take it; the message never repeats the URL (it may hold a password)."""
    if value is not None and urlsplit(value).scheme not in BROKER_SCHEMES:
        raise click.BadParameter("not a Redis URL: use redis://host:port/db (rediss:// for TLS, unix:// for a socket)")
    return value


def broker_wait(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    """--broker-wait as seconds; None (wait until Redis answers) for `forever` or when not given."""
    from kilo_loop.durations import parse_duration

    if value is None or value.strip().lower() in {"forever", "inf"}:
        return None
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise click.BadParameter(f"{exc}; or forever") from None


BROKER_WAIT_HELP = ("how long to wait for Redis at start-up, with backoff (90s, 5m, forever); 0 = fail at once "
                    "[default: forever]")


def reach_queue(client: Any, broker: str, outcome: str, wait: float | None = 0) -> None:
    """Wait for the queue before anything runs on it, saying so ("waiting for the queue at …"): a
    worker under a supervisor or a boot script may well start before its Redis. A Redis that does
    not answer within `wait` is one line and exit 1 (0: at once)."""
    from kilo_loop.fleet.connection import wait_for_broker

    reason = wait_for_broker(client, broker, wait, lambda text: click.echo(f"kilo-loop: {text}", err=True))
    if reason is not None:
        within = f" within {wait:g} s" if wait else ""
        raise click.ClickException(f"cannot reach the queue at {masked(broker)}{within} ({reason}): start "
                                   f"redis-server there or check --broker; {outcome}")


@click.command("worker")
@click.option("--broker", required=True, envvar="KILO_LOOP_BROKER", callback=broker_url, help=BROKER_HELP)
@click.option("--workspace", type=click.Path(path_type=Path, file_okay=False), default=Path(".kilo-loop-fleet"),
              show_default=True,
              help="where this worker clones repositories (one folder per run)")
@click.option("--concurrency", type=click.IntRange(1, 32), default=1, show_default=True, help="runs at once")
@click.option("--broker-wait", "wait", callback=broker_wait, metavar="DURATION", help=BROKER_WAIT_HELP)
def worker_command(broker: str, workspace: Path, concurrency: int, wait: float | None) -> None:
    """Run plans from the queue (a Dramatiq worker on Redis) until Ctrl+C.

    A run's job is acknowledged only when the run ends; if this worker dies, another one resumes
    the run from its last saved iteration. Ctrl+C stops running plans resumably and puts their
    jobs back on the queue."""
    import dramatiq

    from kilo_loop.fleet.jobrun import SHUTDOWN, WorkerConfig
    from kilo_loop.fleet.queue import QUEUE, declare_actor, make_broker

    redis_broker = make_broker(broker)
    reach_queue(redis_broker.client, broker, "no worker was started", wait)
    config = WorkerConfig(workspace=workspace.expanduser().resolve())
    declare_actor(redis_broker, config)
    # worker_timeout caps how long an idle consumer sleeps between polls: with the default (1 s) the
    # next job could wait a second after every finished one; 50 ms keeps the hand-over within the
    # fleet's 150 ms budget per job, for about 20 cheap Redis calls a second while idle.
    worker = dramatiq.Worker(redis_broker, queues={QUEUE}, worker_threads=concurrency, worker_timeout=50)
    worker.queue_prefetch = concurrency  # never hold a job another worker could be running
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    worker.start()
    click.echo(f"kilo-loop worker {config.worker_id}: queue {QUEUE} on {masked(broker)}, "
               f"workspace {config.workspace}, {concurrency} at once", err=True)
    stop.wait()
    click.echo("stopping: running plans stop after saving and go back on the queue", err=True)
    SHUTDOWN.set()
    worker.stop(timeout=120_000)


# No -h: with unknown options let through, click reads a run flag's glued value letter by letter, and an
# `h` in it (`-mclaude-haiku`, `-C/home/me`) printed this help and queued nothing, exit 0.
@click.command("submit", context_settings={"ignore_unknown_options": True, "allow_extra_args": True,
                                          "help_option_names": ["--help"]})
@click.option("--broker", required=True, envvar="KILO_LOOP_BROKER", callback=broker_url, help=BROKER_HELP)
@click.option("--repo", required=True, help="git URL or path the worker clones")
@click.option("--ref", help="branch, tag or commit to start from (default: the repository's HEAD)")
@click.option("--goal", "goal", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="the plan (.md or .json); its content travels in the job")
@click.option("--run-id", help="name the run (default: time + plan name)")
@click.option("--backend", help="quota group for rate-limit pauses (default: --runtime, else 'default')")
@click.option("--push-branch", is_flag=True, help="push kilo-loop/<runId> to the repository instead of "
              "only storing the patch")
@click.pass_context
def submit_command(ctx: click.Context, broker: str, repo: str, ref: str | None, goal: Path, run_id: str | None,
                   backend: str | None, push_branch: bool) -> None:
    """Queue a plan for the fleet. Run flags after the options (-n 5 --verify "pytest -q" …) are
    handed to the run as they are."""
    import dramatiq.errors
    import redis.exceptions

    from kilo_loop.fleet.child import parent_only_flags, plan_flags, plan_label
    from kilo_loop.fleet.queue import enqueue, make_broker
    from kilo_loop.fleet.store import FleetStore, Job
    from kilo_loop.run.layout import valid_run_id
    from kilo_loop.runner import new_run_id

    flags = plan_flags(ctx.args)
    for dropped in parent_only_flags(ctx.args):
        click.echo(f"kilo-loop: warning: {dropped} has no effect in a submitted run (the worker sets it)", err=True)
    name = run_id or f"{new_run_id()}-{plan_label(goal, set())}"
    if not valid_run_id(name):
        raise click.BadParameter(f"invalid run id {name!r}", param_hint="--run-id")
    goal_text = checked_goal_text(goal)
    check_run_flags(goal, flags)
    local = Path(repo).expanduser()
    source = str(local.resolve()) if local.exists() else repo
    job = Job(run_id=name, repo=source, goal_name=goal.name, goal_text=goal_text, ref=ref,
              flags=tuple(flags), backend=backend or _runtime_flag(flags) or "default", push_branch=push_branch)
    try:
        redis_broker = make_broker(broker)
        store = FleetStore(redis_broker.client)
        if store.job(name) is not None:
            raise click.UsageError(f"run {name} is already in the fleet (kilo-loop fleet shows it): pick another "
                                   "--run-id; nothing was queued")
        store.register(job)
        enqueue(redis_broker, job)
    except (redis.exceptions.ConnectionError, dramatiq.errors.BrokerConnectionError) as exc:
        raise click.ClickException(f"cannot reach the queue at {masked(broker)} ({exc}): start redis-server "
                                   "there or check --broker; nothing was queued") from None
    click.echo(name)


def checked_goal_text(goal: Path) -> str:
    """The plan's text, once it reads as a goal: a plan the worker cannot run is refused here (a goal
    error, exit 2), before anything is queued, not found on a worker as a failed run."""
    from kilo_loop.goal.parse import load_goal, read_goal_text

    load_goal(goal)
    return read_goal_text(goal)


def check_run_flags(goal: Path, flags: list[str]) -> None:
    """The run flags as the worker's run will read them: an unknown flag, a value of the wrong type or
    out of range is a usage error here (exit 2), before anything is queued."""
    from kilo_loop.cli import _given, main
    from kilo_loop.settings import load_settings

    run = click.Command("kilo-loop", params=main.params)
    try:
        run_ctx = run.make_context("kilo-loop", ["--goal", str(goal), *flags])
    except click.UsageError as exc:
        raise click.UsageError(f"run flags: {exc.format_message()}") from None
    load_settings(_given(run_ctx, run_ctx.params), None)


def _runtime_flag(flags: list[str]) -> str | None:
    for index, flag in enumerate(flags):
        if flag == "--runtime" and index + 1 < len(flags):
            return flags[index + 1]
        if flag.startswith("--runtime="):
            return flag.split("=", 1)[1]
    return None


@click.command("fleet")
@click.option("--broker", envvar="KILO_LOOP_BROKER", callback=broker_url, help=BROKER_HELP)
@click.option("--local", "local_workers", type=click.IntRange(1, 16),
              help="try-out: start redis-server on a free loopback port and this many workers here")
@click.option("--workspace", type=click.Path(path_type=Path, file_okay=False), help="with --local: where the workers clone")
@click.option("-p", "--port", type=click.IntRange(0, 65535), default=7999, show_default=True,
              help="dashboard port (0: any free port)")
@click.option("--host", help="dashboard host (default 127.0.0.1)")
@click.option("--lan", is_flag=True, help="bind every interface (a token is always required)")
@click.option("--broker-wait", "wait", callback=broker_wait, metavar="DURATION", help=BROKER_WAIT_HELP)
def fleet_command(broker: str | None, local_workers: int | None, workspace: Path | None, port: int,
                  host: str | None, lan: bool, wait: float | None) -> None:
    """Watch and steer every run of every worker: one list, one inbox, controls per run."""
    from kilo_loop.fleet.keeper import FleetKeeper
    from kilo_loop.fleet.local import LocalFleetError, LocalWorker, RedisServer
    from kilo_loop.fleet.queue import enqueue, make_broker
    from kilo_loop.fleet.serve import fleet_dashboard
    from kilo_loop.fleet.sources import RedisRuns
    from kilo_loop.fleet.store import FleetStore
    from kilo_loop.web.binding import BindError, PortInUse

    if not broker and not local_workers:
        raise click.UsageError("pass --broker redis://… or --local N")
    typed_broker = click.get_current_context().get_parameter_source("broker") == ParameterSource.COMMANDLINE
    if typed_broker and local_workers:
        raise click.UsageError("pass --broker redis://… or --local N, not both (--local starts its own redis-server)")
    if workspace and not local_workers:
        click.echo("kilo-loop: warning: --workspace has no effect without --local (each worker has its own)", err=True)
    server: RedisServer | None = None
    workers: list[LocalWorker] = []
    try:
        if local_workers:
            base = (workspace or Path(tempfile.mkdtemp(prefix="kilo-loop-fleet-"))).expanduser().resolve()
            server = RedisServer(base / "redis").start()
            broker = server.url
            workers = [LocalWorker(broker, base / f"worker-{n}").start() for n in range(1, local_workers + 1)]
            click.echo(f"local fleet: redis-server at {broker}, {local_workers} worker(s) under {base}")
            click.echo(f"queue a plan:  kilo-loop submit --broker {broker} --repo <path or URL> --goal plan.md")
        assert broker is not None
        store = FleetStore.from_url(broker)
        reach_queue(store.client, broker, "the dashboard was not started", wait)
        dashboard = fleet_dashboard(RedisRuns(store), host, port, lan)
        redis_broker = make_broker(broker)
        keeper = FleetKeeper(store, lambda job: enqueue(redis_broker, job),
                             lambda text: click.echo(f"kilo-loop: {text}", err=True))
        asyncio.run(_serve(dashboard, keeper))
    except (LocalFleetError, PortInUse, BindError) as exc:
        click.echo(f"kilo-loop: {exc}", err=True)
        sys.exit(2)
    finally:
        for worker in workers:
            worker.stop()
        if server is not None:
            server.stop()


KEEPER_SECONDS = 2.0


async def _serve(dashboard: FleetDashboard, keeper: FleetKeeper) -> None:
    await dashboard.start()
    click.echo(f"Fleet dashboard {dashboard.url} (Ctrl+C to quit)")
    stopped = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopped.set)
    keeping = asyncio.create_task(_keep(keeper, stopped), name="kilo-loop fleet keeper")
    await stopped.wait()
    await keeping
    await dashboard.stop()


async def _keep(keeper: FleetKeeper, stopped: asyncio.Event) -> None:
    """Look at Redis every few seconds: a Redis that came back empty gets its unfinished jobs back."""
    from kilo_loop.fleet.connection import OUTAGE_ERRORS

    away = False
    while not stopped.is_set():
        try:
            await asyncio.to_thread(keeper.check)
        except OUTAGE_ERRORS as exc:
            if not away:
                click.echo(f"kilo-loop: lost the queue ({exc}); the dashboard shows the last it knew until it "
                           "answers again", err=True)
            away = True
        else:
            if away:
                click.echo("kilo-loop: the queue answers again", err=True)
            away = False
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopped.wait(), KEEPER_SECONDS)
