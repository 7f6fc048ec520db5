"""The core loop's costs, each against a floor measured in the same run.

    PYTHONPATH=src python benchmarks/bench_loop.py [--mb 100] [--iterations 50] [--files 5000]
                                                   [--only stream|loop] [--profile]

(a) stream: `NdjsonEventParser` fed a generated NDJSON file of `kilo run --format json` events in
    64 KiB chunks, against a bare `orjson.loads` of every line of the same file read the same way.
    Target: parser time at most 2x the floor.
(b) loop: the real CLI (`python -m kilo_loop … -n 50`) driving the instant in-process stub agent
    (`benchmarks/stub_agent.py`) on a temporary git repository of 5,000 committed files; the
    interpreter start-up (`python -c "import kilo_loop.cli, kilo_loop.commands.run"`) is subtracted. Target: at most 100 ms
    per iteration. Second floor: 50x `git status --porcelain=v1 -z --untracked-files=all` +
    `git diff HEAD --binary` on the same repository.
(c) memory: peak RSS of that loop process against `python -c "import kilo_loop.cli"`. Target: at
    most 80 MB.
(d) circles: the going-in-circles detectors (loop/circles: the failure signature of a failed
    2,000-line verify run's tail as the loop keeps it, the work-tree fingerprint and file flips, the
    thrash streak, the reducer's fold) per iteration on the same 5,000-file repository, three more
    files edited each iteration; `git status` is read outside the timing (the loop reads it anyway).
    Floor: that `git status`. Target: at most 2 ms per iteration. Also the doom-loop watch per tool call.

`--profile` also runs the loop once more under cProfile and prints its hot spots.
Everything is written to a temporary directory that is removed at the end.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from kilo_loop.agent.kilo.stream import NdjsonEventParser
from kilo_loop.agent.protocol import GarbageLine

CIRCLES_TARGET_MS = 2.0
CHUNK = 64 * 1024
MB = 1024 * 1024
BENCH_DIR = Path(__file__).resolve().parent
STREAM_TARGET = 2.0
ITERATION_TARGET_MS = 100.0
FLOOR_TARGET = 1.5  # the loop's own cost per iteration against its git floor (issue 8)
RSS_TARGET_MB = 80.0


@dataclass(frozen=True)
class Row:
    name: str
    value: str
    floor: str
    ratio: str
    target: str
    ok: bool | None


# ------------------------------------------------------------------ (a) the NDJSON stream

_PROSE = (
    "the loop runs verify after each iteration and records the report so the operator can see which "
    "stage passed failed or needs a decision from a human reviewer before the next step tests cover "
    "parser state reducer guard checkpoint budget handoff summary progress session token usage"
)
_WORDS = _PROSE.split(" ")
_CODE = (
    (
        'def handler(request: Request) -> Response:\n    """Return the user\'s config."""\n'
        '    data = {"name": request.user, "path": "C:\\\\tmp\\\\x"}\n    return Response(data, status=200)\n'
    ),
    "export function Stage({ id, title }: Props) {\n\treturn <li key={id}>{title} — ✓</li>;\n}\n",
    "$ pnpm test\n PASS  src/parser.test.ts (4 tests)\n FAIL  src/guard.test.ts\n  ● blocks rm -rf /\n",
)
_TOOLS = ("read", "bash", "edit", "write", "grep", "glob")


class TextPool:
    """A few MB of prose, code, unicode and escapes; event bodies are slices of it."""

    def __init__(self, rng: random.Random, size: int = 2 * MB) -> None:
        pieces: list[str] = []
        total = 0
        while total < size:
            piece = rng.choice(_CODE) if rng.random() < 0.3 else " ".join(rng.choices(_WORDS, k=40)) + ".\n"
            pieces.append(piece)
            total += len(piece)
        self._text = "".join(pieces)
        self._rng = rng

    def take(self, length: int) -> str:
        start = self._rng.randrange(0, len(self._text) - length)
        return self._text[start:start + length]

    def take_sized(self, low: int, high: int) -> str:
        # Log-uniform: most bodies are short, a few are large (file contents, test logs).
        return self.take(int(low * (high / low) ** self._rng.random()))


class EventWriter:
    """Realistic `kilo run --format json` steps: step_start, reasoning, text, tool calls, step_finish."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._pool = TextPool(rng)
        self._serial = 0
        self._session = self._id("ses")
        self._message = self._id("msg")
        self._now = 1_796_028_981_798

    def _id(self, prefix: str) -> str:
        self._serial += 1
        return f"{prefix}_{self._serial:012x}{self._rng.getrandbits(64):016x}"[:30]

    def _line(self, kind: str, part: dict[str, object]) -> bytes:
        self._now += self._rng.randrange(1, 900)
        part = {"id": self._id("prt"), "sessionID": self._session, "messageID": self._message, **part}
        return orjson.dumps({"type": kind, "timestamp": self._now, "sessionID": self._session, "part": part})

    def _tool(self) -> bytes:
        tool = self._rng.choice(_TOOLS)
        path = f"src/{self._rng.choice(_WORDS)}/{self._rng.choice(_WORDS)}.ts"
        tool_input: dict[str, object] = {"filePath": path}
        if tool == "bash":
            tool_input = {"command": f"pnpm test -- {path}", "description": "Run the tests"}
        elif tool in ("write", "edit"):
            tool_input["content" if tool == "write" else "newString"] = self._pool.take_sized(40, 16_000)
        status = "error" if self._rng.random() < 0.05 else "completed"
        state: dict[str, object] = {"status": status, "input": tool_input,
                                    "time": {"start": self._now, "end": self._now + 50}}
        state["error" if status == "error" else "output"] = self._pool.take_sized(2, 32_000)
        return self._line("tool_use", {"type": "tool", "callID": self._id("call"), "tool": tool, "state": state})

    def step(self) -> Iterator[bytes]:
        self._message = self._id("msg")
        yield self._line("step_start", {"type": "step-start", "snapshot": f"{self._rng.getrandbits(160):040x}"})
        if self._rng.random() < 0.5:
            yield self._line("reasoning", {"type": "reasoning", "text": self._pool.take_sized(20, 4_000)})
        yield self._line("text", {"type": "text", "text": self._pool.take_sized(5, 6_000)})
        for _ in range(self._rng.randrange(0, 4)):
            yield self._tool()
        tokens_in = self._rng.randrange(2_000, 120_000)
        tokens = {"total": tokens_in + 400, "input": tokens_in, "output": 380, "reasoning": 20,
                  "cache": {"read": tokens_in // 2, "write": 0}}
        yield self._line("step_finish", {"type": "step-finish", "reason": "tool-calls", "cost": 0.0123,
                                         "tokens": tokens})


@dataclass(frozen=True)
class Corpus:
    path: Path
    size: int
    lines: int
    duplicates: int
    garbage: int


_GARBAGE = (b"Warning: kilo is running in a non-interactive terminal", b'{"type":"text","part":{"id":"torn',
            b"\x1b[31merror\x1b[0m something went wrong", b"[1, 2, 3]")


def write_corpus(path: Path, target_bytes: int, seed: int) -> Corpus:
    rng = random.Random(seed)
    writer = EventWriter(rng)
    size = lines = duplicates = garbage = 0
    with path.open("wb") as out:
        while size < target_bytes:
            for line in writer.step():
                batch = [line]
                if rng.random() < 0.002:  # an old CLI printing the event twice
                    batch.append(line)
                    duplicates += 1
                if rng.random() < 0.0005:
                    batch.append(rng.choice(_GARBAGE))
                    garbage += 1
                for item in batch:
                    out.write(item + b"\n")
                    size += len(item) + 1
                    lines += 1
    return Corpus(path, size, lines, duplicates, garbage)


@dataclass(frozen=True)
class Timing:
    wall: float
    cpu: float  # this process's CPU time: what the ratio uses, as other work shares the cores


class Stopwatch:
    def __init__(self) -> None:
        self._wall = time.perf_counter()
        self._cpu = time.process_time()

    def stop(self) -> Timing:
        return Timing(time.perf_counter() - self._wall, time.process_time() - self._cpu)


def run_parser(path: Path) -> tuple[Timing, int, int]:
    """Timing, events, garbage events: the parser fed the file in CHUNK-sized pieces."""
    parser = NdjsonEventParser()
    events = garbage = 0
    watch = Stopwatch()
    with path.open("rb") as source:
        while chunk := source.read(CHUNK):
            for event in parser.feed(chunk):
                events += 1
                garbage += isinstance(event, GarbageLine)
        for event in parser.finish():
            events += 1
            garbage += isinstance(event, GarbageLine)
    return watch.stop(), events, garbage


def _loads(line: bytes) -> int:
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError:
        return 0
    return 1


def run_floor(path: Path) -> tuple[Timing, int]:
    """Timing and decoded lines: `orjson.loads` of every line, read and split the same way."""
    decoded = 0
    carry = b""
    watch = Stopwatch()
    with path.open("rb") as source:
        while chunk := source.read(CHUNK):
            lines = (carry + chunk).split(b"\n")
            carry = lines.pop()
            for line in lines:
                decoded += _loads(line)
        if carry:
            decoded += _loads(carry)
    return watch.stop(), decoded


def bench_stream(tmp: Path, megabytes: int, seed: int, repeat: int) -> list[Row]:
    print(f"(a) generating {megabytes} MB of NDJSON events…", flush=True)
    corpus = write_corpus(tmp / "events.ndjson", megabytes * MB, seed)
    print(f"    {corpus.lines:,} lines, {corpus.duplicates} duplicates, {corpus.garbage} garbage", flush=True)
    run_floor(corpus.path)  # warm the page cache
    parser_runs: list[Timing] = []
    floor_runs: list[Timing] = []
    events = garbage = 0
    for _ in range(repeat):
        floor_runs.append(run_floor(corpus.path)[0])
        timing, events, garbage = run_parser(corpus.path)
        parser_runs.append(timing)
    if garbage != corpus.garbage:
        raise SystemExit(f"parser reported {garbage} garbage lines, the corpus has {corpus.garbage}")
    mb = corpus.size / MB
    parser_cpu, floor_cpu = min(t.cpu for t in parser_runs), min(t.cpu for t in floor_runs)
    parser_wall, floor_wall = min(t.wall for t in parser_runs), min(t.wall for t in floor_runs)
    ratio = parser_cpu / floor_cpu
    print(f"    parser {mb / parser_cpu:,.0f} MB/s CPU, {mb / parser_wall:,.0f} MB/s wall ({events:,} events); "
          f"floor {mb / floor_cpu:,.0f} MB/s CPU, {mb / floor_wall:,.0f} MB/s wall; ratio {ratio:.2f}x CPU, "
          f"{parser_wall / floor_wall:.2f}x wall (best of {repeat})", flush=True)
    return [Row("(a) NDJSON parser", f"{mb / parser_cpu:,.0f} MB/s", f"{mb / floor_cpu:,.0f} MB/s orjson.loads",
                f"{ratio:.2f}x", f"<= {STREAM_TARGET:.0f}x", ratio <= STREAM_TARGET)]


# ------------------------------------------------------------------ (b) + (c) the loop


@dataclass(frozen=True)
class ChildRun:
    seconds: float
    cpu_seconds: float  # user + system time of this child and of the children it reaped (git)
    exit_code: int
    maxrss_kb: int  # ru_maxrss of this child (and any of its own children, which it reaped)
    hwm_kb: int  # VmHWM of the child process alone, sampled from /proc while it ran
    stdout: str
    stderr: str


def _read_hwm(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def run_child(argv: Sequence[str], env: dict[str, str], cwd: Path | None = None, stdin: bytes = b"") -> ChildRun:
    """Run one process; wait4 gives the rusage of exactly this child (not of other children)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as given:
        given.write(stdin)
        given.seek(0)
        hwm = [0]
        done = threading.Event()
        start = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=given, stdout=out, stderr=err)

        def sample() -> None:
            while not done.wait(0.02):
                hwm[0] = max(hwm[0], _read_hwm(proc.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _pid, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        done.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return ChildRun(seconds, usage.ru_utime + usage.ru_stime, proc.returncode, usage.ru_maxrss, hwm[0],
                        out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"))


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    paths = [str(BENCH_DIR)]
    src = BENCH_DIR.parent / "src"
    if (src / "kilo_loop").is_dir():
        paths.append(str(src))
    if os.environ.get("PYTHONPATH"):
        paths.append(os.environ["PYTHONPATH"])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "NO_COLOR": "1"}
    env.pop("KILO_LOOP_BACKEND", None)
    env.update(extra or {})
    return env


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> None:
    subprocess.run(["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", *args],
                   cwd=repo, env=env, check=True, stdout=subprocess.DEVNULL)


def goal_markdown(stages: int) -> str:
    items = [f"- [ ] Implement part {i} of the widget pipeline" for i in range(1, stages + 1)]
    return "# Benchmark goal\n\nBuild the widget pipeline step by step.\n\n" + "\n".join(items) + "\n"


def make_repo(root: Path, files: int, stages: int) -> tuple[Path, Path]:
    """A committed repository of `files` small files in nested dirs, and its markdown goal."""
    repo = root / "repo"
    for i in range(files):
        path = repo / f"pkg{i % 8}" / f"mod{i % 5}" / f"sub{i % 3}" / f"file_{i:05d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'"""Module {i}."""\n\nVALUE_{i} = {i}\n\n\ndef f_{i}(x: int) -> int:\n    return x + {i}\n')
    (repo / "README.md").write_text("# Benchmark repository\n")
    goal = repo / "PLAN.md"
    goal.write_text(goal_markdown(stages))
    # Files written in the same second as the index are "racily clean" and get re-hashed by every
    # git status; wait so the index is strictly newer, as in a long-lived checkout.
    time.sleep(1.1)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    return repo, goal


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def git_floor(repo: Path, iterations: int) -> float:
    """Seconds for `iterations` x (status + diff), with one tracked file modified as the stub does."""
    readme = repo / "README.md"
    original = readme.read_bytes()
    readme.write_bytes(original + b"one change\n")
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    status = ["git", "status", "--porcelain=v1", "-z", "--untracked-files=all"]
    diff = ["git", "diff", "HEAD", "--binary"]
    start = time.perf_counter()
    for _ in range(iterations):
        subprocess.run(status, cwd=repo, env=env, check=True, stdout=subprocess.DEVNULL)
        subprocess.run(diff, cwd=repo, env=env, check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    readme.write_bytes(original)
    return seconds


def loop_argv(repo: Path, goal: Path, iterations: int) -> list[str]:
    return ["-m", "kilo_loop", "-C", str(repo), "--goal", str(goal), "-n", str(iterations), "--no-confirm",
            "--no-dashboard", "--hitl", "off", "--quiet"]


def iteration_reports(repo: Path) -> int:
    return len(list((repo / ".kilocode-loop" / "runs").glob("*/iterations/*-report.json")))


def cli_import_error() -> str | None:
    probe = subprocess.run([sys.executable, "-c", "import kilo_loop.cli"], check=False, env=child_env(),
                           capture_output=True, text=True)
    return None if probe.returncode == 0 else (probe.stderr.strip().splitlines() or ["?"])[-1]


STARTUP_ARGV = ("-c", "import kilo_loop.cli, kilo_loop.commands.run")


def startup_floor(repeat: int) -> tuple[float, float]:
    """Median wall and CPU seconds of starting the interpreter and importing what a run imports
    (`--version` no longer imports the run's modules, so it would understate the start-up)."""
    runs = [run_child([sys.executable, *STARTUP_ARGV], child_env()) for _ in range(repeat)]
    if any(r.exit_code for r in runs):
        raise SystemExit(f"`python {' '.join(STARTUP_ARGV)}` failed:\n{runs[0].stderr}")
    return statistics.median(r.seconds for r in runs), statistics.median(r.cpu_seconds for r in runs)


def expected_outcome(stages: int, iterations: int) -> tuple[int, str]:
    """The seed's exit code and status: `done` (0) when the iterations cover every stage, else
    `done-with-errors` (1, "iterations used, stages not done") — still a complete run of N iterations."""
    return (0, "done") if stages <= iterations else (1, "done-with-errors")


def check_loop_run(run: ChildRun, repo: Path, stages: int, iterations: int, check_exit: bool = True) -> str:
    """Fail loudly unless the run ended as expected with one report per iteration; returns its status.
    (`python -m cProfile` swallows the exit code, hence `check_exit`.)"""
    reports = iteration_reports(repo)
    states = list((repo / ".kilocode-loop" / "runs").glob("*/state.json"))
    state = orjson.loads(states[0].read_bytes()) if len(states) == 1 else {}
    code, status = expected_outcome(stages, iterations)
    code = code if check_exit else run.exit_code
    completed = len(state.get("completedStages") or [])
    seen = (run.exit_code, state.get("status"), state.get("iteration"), reports, completed)
    if seen != (code, status, iterations, iterations, min(stages, iterations)):
        raise SystemExit(f"loop run failed: exit {run.exit_code} (expected {code}), status {state.get('status')!r} "
                         f"(expected {status!r}), iteration {state.get('iteration')}, {reports}/{iterations} "
                         f"iteration reports, {completed} stages done\n"
                         f"--- stdout\n{run.stdout[-3000:]}\n--- stderr\n{run.stderr[-3000:]}")
    return status


def run_loop(repo: Path, goal: Path, stages: int, iterations: int) -> tuple[ChildRun, str]:
    env = child_env({"KILO_LOOP_BACKEND": "stub_agent:StubBackend"})
    run = run_child([sys.executable, *loop_argv(repo, goal, iterations)], env)
    return run, check_loop_run(run, repo, stages, iterations)


def marginal_ms(tmp: Path, files: int, stages: int, iterations: int, full: ChildRun) -> tuple[int, float, float]:
    """ms per extra iteration, wall and CPU: the full run against a short one on a fresh repository,
    which cancels every one-time cost (imports, settings, run set-up, final report)."""
    short = max(1, iterations // 5)
    repo, goal = make_repo(tmp / "short", files, stages)
    run, _status = run_loop(repo, goal, stages, short)
    extra = iterations - short
    return short, (full.seconds - run.seconds) * 1000 / extra, (full.cpu_seconds - run.cpu_seconds) * 1000 / extra


def bench_loop(tmp: Path, files: int, stages: int, iterations: int) -> list[Row]:
    print(f"(b) creating a git repository of {files:,} files and a {stages}-stage goal…", flush=True)
    repo, goal = make_repo(tmp / "loop", files, stages)
    startup, startup_cpu = startup_floor(5)
    cpu_before = children_cpu()
    git_ms = git_floor(repo, iterations) * 1000 / iterations
    git_cpu_ms = (children_cpu() - cpu_before) * 1000 / iterations
    print(f"    start-up {startup * 1000:.0f} ms; git floor {git_ms:.1f} ms/iteration", flush=True)
    run, status = run_loop(repo, goal, stages, iterations)
    per_iteration_ms = (run.seconds - startup) * 1000 / iterations
    cpu_ms = (run.cpu_seconds - startup_cpu) * 1000 / iterations
    print(f"    loop {run.seconds:.2f} s wall for {iterations} iterations (exit {run.exit_code}, {status}) → "
          f"{per_iteration_ms:.1f} ms/iteration; CPU (loop + its git children, less start-up) "
          f"{cpu_ms:.1f} ms/iteration", flush=True)
    short, marginal, marginal_cpu = marginal_ms(tmp, files, stages, iterations, run) if iterations > 1 else (0, 0.0, 0.0)
    if short:
        print(f"    marginal cost (n={iterations} run minus an n={short} run) {marginal:.1f} ms/iteration wall, "
              f"{marginal_cpu:.1f} ms CPU", flush=True)
    import_rss = run_child([sys.executable, "-c", "import kilo_loop.cli"], child_env())
    loop_mb, hwm_mb, floor_mb = run.maxrss_kb / 1024, run.hwm_kb / 1024, import_rss.maxrss_kb / 1024
    print(f"(c) peak RSS: loop {loop_mb:.1f} MB (VmHWM sampled {hwm_mb:.1f} MB), "
          f"import kilo_loop.cli {floor_mb:.1f} MB", flush=True)
    return [
        Row("(b) loop cost / iteration", f"{per_iteration_ms:.1f} ms", f"{git_ms:.1f} ms git status+diff",
            f"{per_iteration_ms / git_ms:.2f}x", f"<= {ITERATION_TARGET_MS:.0f} ms",
            per_iteration_ms <= ITERATION_TARGET_MS),
        Row("    CPU / iteration vs git CPU", f"{cpu_ms:.1f} ms", f"{git_cpu_ms:.1f} ms git status+diff CPU",
            f"{cpu_ms / git_cpu_ms:.2f}x", f"<= {FLOOR_TARGET}x", cpu_ms / git_cpu_ms <= FLOOR_TARGET),
        Row("    marginal / iteration", f"{marginal:.1f} ms" if short else "-", f"{git_ms:.1f} ms git status+diff",
            f"{marginal / git_ms:.2f}x" if short else "", "", None),
        Row("    marginal CPU / iteration", f"{marginal_cpu:.1f} ms" if short else "-",
            f"{git_cpu_ms:.1f} ms git status+diff CPU", f"{marginal_cpu / git_cpu_ms:.2f}x" if short else "", "",
            None),
        Row("    wall of the run", f"{run.seconds:.2f} s", f"{startup * 1000:.0f} ms start-up (imports)", "", "",
            None),
        Row("(c) loop peak RSS", f"{loop_mb:.1f} MB", f"{floor_mb:.1f} MB import kilo_loop.cli",
            f"{loop_mb / floor_mb:.2f}x", f"<= {RSS_TARGET_MB:.0f} MB", loop_mb <= RSS_TARGET_MB),
    ]


def git_trace_summary(trace: Path, iterations: int) -> list[str]:
    """Count and wall time of every git command the loop ran, from git's own trace2 event log."""
    commands: dict[str, str] = {}
    elapsed: dict[str, float] = {}
    for line in trace.read_bytes().splitlines():
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        sid = str(event.get("sid"))
        if event.get("event") == "start" and "/" not in sid:  # top-level git processes only
            commands[sid] = " ".join(str(arg) for arg in event.get("argv", [])[1:3])
        elif event.get("event") == "exit":
            elapsed[sid] = float(event.get("t_abs", 0.0))
    totals: dict[str, tuple[int, float]] = {}
    for sid, command in commands.items():
        count, seconds = totals.get(command, (0, 0.0))
        totals[command] = (count + 1, seconds + elapsed.get(sid, 0.0))
    lines = [f"{count / iterations:5.1f}/iter {seconds * 1000 / iterations:7.1f} ms/iter  git {command}"
             for command, (count, seconds) in sorted(totals.items(), key=lambda item: -item[1][1])]
    count = sum(c for c, _ in totals.values())
    seconds = sum(t for _, t in totals.values())
    return [*lines, f"{count / iterations:5.1f}/iter {seconds * 1000 / iterations:7.1f} ms/iter  all git processes"]


def profile_loop(tmp: Path, files: int, stages: int, iterations: int, top: int = 30) -> None:
    """Run the CLI once more under cProfile (on a fresh repository) and print its hot spots,
    with a per-command account of the git processes it started (GIT_TRACE2_EVENT)."""
    print("\nprofiling the loop under cProfile…", flush=True)
    repo, goal = make_repo(tmp / "profile", files, stages)
    out, trace = tmp / "loop.prof", tmp / "git-trace.jsonl"
    env = child_env({"KILO_LOOP_BACKEND": "stub_agent:StubBackend", "GIT_TRACE2_EVENT": str(trace)})
    run = run_child([sys.executable, "-m", "cProfile", "-o", str(out), *loop_argv(repo, goal, iterations)], env)
    check_loop_run(run, repo, stages, iterations, check_exit=False)
    print(f"    {run.seconds:.2f} s wall under cProfile")
    for key, restriction in (("cumulative", "kilo_loop"), ("tottime", "")):
        text = io.StringIO()
        pstats.Stats(str(out), stream=text).sort_stats(key).print_stats(restriction, top)
        print(f"--- top {top} by {key} {restriction}\n" + text.getvalue().split("\n\n", 2)[-1].rstrip())
    if trace.exists():
        print("--- git processes started by the loop\n" + "\n".join(git_trace_summary(trace, iterations)))


def profile_parser(path: Path, top: int = 15) -> None:
    profiler = cProfile.Profile()
    profiler.runcall(run_parser, path)
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(top)
    print(f"--- parser, top {top} by tottime\n" + text.getvalue().split("\n\n", 2)[-1])


# ------------------------------------------------------------------ report


def _verify_output(rng: random.Random, lines: int) -> str:
    body = [f"tests/test_m{rng.randrange(99)}.py::test_{rng.randrange(999)} PASSED [{i * 100 // lines}%]"
            for i in range(lines)]
    tail = ["FAILED tests/test_parser.py::test_nested - AssertionError: assert 3 == 4",
            f"===== 1 failed, {lines} passed in {rng.uniform(1, 9):.2f}s ====="]
    return "\n".join(body + tail)


def bench_circles(tmp: Path, files: int, iterations: int, seed: int = 7) -> list[Row]:
    """(d) the detectors' own cost per iteration, edits and `git status` outside the timing."""
    from kilo_loop.gitstatus import read_status, snapshot
    from kilo_loop.loop.circles.doom import DoomWatch
    from kilo_loop.loop.circles.watch import CircleWatch, Iteration
    from kilo_loop.run.events import StateOpened
    from kilo_loop.run.reducer import reduce
    from kilo_loop.run.state import RunState, VerifyResult
    from kilo_loop.verify import output_tail

    root = tmp / "circles"
    repo, _goal = make_repo(root, files, 1)
    rng = random.Random(seed)
    paths = sorted(str(p.relative_to(repo)) for p in repo.glob("pkg*/**/*.py"))
    state = reduce(None, StateOpened(state=RunState(run_id="b", project=str(repo), goal_title="g").wire()))
    watch = CircleWatch(repo, max_same_failure=1_000_000)
    status = read_status(repo)
    before = snapshot(repo, status, ".kilocode-loop")
    spent: list[float] = []
    floor: list[float] = []
    per_call: list[float] = []
    for number in range(1, iterations + 1):
        changed = rng.sample(paths, 3)
        for path in changed:
            (repo / path).write_text(f"VALUE = {number}\n")
        started = time.perf_counter()
        status = read_status(repo)
        floor.append(time.perf_counter() - started)
        after = snapshot(repo, status, ".kilocode-loop")
        # what the loop holds of a verify run: its tail (verify.py), as the detectors are given it
        tail = output_tail(_verify_output(rng, 2000))
        verify = VerifyResult(command="pytest", exit_code=1, passed=False, output_tail=tail)
        started = time.perf_counter()
        seen = watch.observe(state.circles, Iteration(number, "stage-1", verify, changed, before, after,
                                                      status.head, 0.01))
        state = reduce(state, seen.event)
        spent.append(time.perf_counter() - started)
        doom = DoomWatch(8, 12)
        started = time.perf_counter()
        for call in range(40):
            doom.observe("bash", {"command": f"pytest -q tests/test_{call % 30}.py", "description": "run"}, False)
        per_call.append((time.perf_counter() - started) / 40)
        before = after
    per = statistics.median(spent) * 1000
    worst = max(spent) * 1000
    status_ms = statistics.median(floor) * 1000
    return [
        Row("circles: detectors per iteration (median)", f"{per:.2f} ms", f"{status_ms:.1f} ms git status",
            f"{per / status_ms:.2f}x", f"<= {CIRCLES_TARGET_MS:.0f} ms", per <= CIRCLES_TARGET_MS),
        Row("circles: detectors per iteration (worst)", f"{worst:.2f} ms", "", "", "", None),
        Row("circles: doom-loop watch per tool call", f"{statistics.median(per_call) * 1e6:.0f} us", "", "", "",
            None),
    ]


def print_table(rows: Sequence[Row]) -> None:
    headers = ("measurement", "value", "floor", "ratio", "target", "ok")
    cells = [headers] + [(r.name, r.value, r.floor, r.ratio, r.target,
                          "" if r.ok is None else ("yes" if r.ok else "NO")) for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    print()
    for index, row in enumerate(cells):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
        if index == 0:
            print("  ".join("-" * width for width in widths))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=100, help="size of the generated NDJSON stream")
    parser.add_argument("--repeat", type=int, default=3, help="stream timings: best of N")
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--files", type=int, default=5000, help="committed files in the loop's repository")
    parser.add_argument("--stages", type=int, default=60)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--only", choices=("stream", "loop", "circles"), help="run one part only")
    parser.add_argument("--profile", action="store_true", help="also print cProfile hot spots")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    rows: list[Row] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kilo-loop-bench-") as name:
        tmp = Path(name)
        if args.only == "circles":
            rows += bench_circles(tmp, args.files, args.iterations, args.seed)
            print_table(rows)
            return 0 if all(r.ok is not False for r in rows) else 1
        if args.only != "loop":
            rows += bench_stream(tmp, args.mb, args.seed, args.repeat)
            if args.profile:
                profile_parser(tmp / "events.ndjson")
            (tmp / "events.ndjson").unlink()
        if args.only != "stream":
            problem = cli_import_error()
            if problem:
                print(f"(b)/(c) skipped: `import kilo_loop.cli` fails: {problem}", file=sys.stderr)
                print_table(rows)
                return 1
            rows += bench_loop(tmp, args.files, args.stages, args.iterations)
            if args.profile:
                profile_loop(tmp, args.files, args.stages, args.iterations)
    print_table(rows)
    print(f"\ntotal benchmark time {time.perf_counter() - started:.0f} s")
    return 0 if all(r.ok is not False for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
