"""A long run: does iteration 1,000 cost what iteration 100 did? (issue 8 item 9)

    PYTHONPATH=src python benchmarks/bench_longrun.py [--iterations 1000] [--files 500] [--window 20]
                                                      [--no-checkpoint]

One real CLI run (`python -m kilo_loop … -n 1000`) drives the instant stub agent
(`benchmarks/stub_agent.py`) on a temporary repository with a goal of as many stages as iterations;
each iteration the stub ticks one stage and appends a line to README.md, so the diff against HEAD
grows all run long. The stub records, at every session start, the loop process's clock, CPU time
(its own and its reaped git children's), bytes written (`wchar`) and RSS (`STUB_AGENT_METRICS`).

Printed, for a window of iterations around 100 and the last window before 1,000 (the floor is the
same run's early window): the loop's own wall and CPU time per iteration, bytes it wrote per
iteration, RSS, and what a checkpoint adds to the repository's object store (objects reachable from
`refs/kilo-loop/<run>/iter-N` and not from iter-N-1) against the size of the cumulative patch the
old format stored (`git diff --binary HEAD <tree>`). Then the run directory's size and state.json's.
Targets: iteration 1,000 at most 1.2x iteration 100 in time (CPU) and bytes written; RSS within
5 MB; checkpoint storage grows with what changed, not with the cumulative diff.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench_loop import Row, check_loop_run, child_env, loop_argv, make_repo, print_table, run_child

TIME_TARGET = 1.2
BYTES_TARGET = 1.2
RSS_TARGET_MB = 5.0


@dataclass(frozen=True)
class Sample:
    iteration: int
    clock: float
    cpu: float
    children_cpu: float
    wchar: int
    rss_kb: int


@dataclass(frozen=True)
class Window:
    label: str
    wall_ms: float
    cpu_ms: float
    bytes_written: float
    rss_mb: float


def read_samples(path: Path) -> list[Sample]:
    samples: dict[int, Sample] = {}
    for line in path.read_text(encoding="ascii").splitlines():
        fields = line.split()
        iteration = int(fields[0])
        samples.setdefault(iteration, Sample(iteration, float(fields[1]), float(fields[2]), float(fields[3]),
                                             int(fields[4]), int(fields[5])))
    return [samples[number] for number in sorted(samples)]


def window(samples: Sequence[Sample], label: str, first: int, size: int) -> Window:
    """Per-iteration means over iterations first … first+size-1 (each measured to the next start)."""
    by_number = {sample.iteration: sample for sample in samples}
    pairs = [(by_number[n], by_number[n + 1]) for n in range(first, first + size)
             if n in by_number and n + 1 in by_number]
    if not pairs:
        raise SystemExit(f"no samples for iterations {first}-{first + size - 1}")
    return Window(
        label=label,
        wall_ms=statistics.mean(b.clock - a.clock for a, b in pairs) * 1000,
        cpu_ms=statistics.mean((b.cpu + b.children_cpu) - (a.cpu + a.children_cpu) for a, b in pairs) * 1000,
        bytes_written=statistics.mean(b.wchar - a.wchar for a, b in pairs),
        rss_mb=pairs[-1][1].rss_kb / 1024,
    )


def git_out(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    return subprocess.run(["git", *args], cwd=repo, input=stdin, capture_output=True, check=True).stdout


def checkpoint_ref(repo: Path, iteration: int) -> str | None:
    refs = git_out(repo, "for-each-ref", "--format=%(refname)", "refs/kilo-loop").decode().split()
    name = f"/iter-{iteration:02d}"
    return next((ref for ref in refs if ref.endswith(name)), None)


def stored_by_checkpoint(repo: Path, iteration: int) -> tuple[int, int]:
    """(bytes on disk of the objects checkpoint N added, bytes of the cumulative patch at N)."""
    ref, previous = checkpoint_ref(repo, iteration), checkpoint_ref(repo, iteration - 1)
    if ref is None:
        return 0, 0
    listed = git_out(repo, "rev-list", "--objects", ref, *(["--not", previous] if previous else []))
    oids = b"\n".join(line.split(b" ", 1)[0] for line in listed.splitlines()) + b"\n"
    sizes = git_out(repo, "cat-file", "--batch-check=%(objectsize:disk)", stdin=oids).split()
    patch = git_out(repo, "diff", "--binary", "HEAD", ref)
    return sum(int(size) for size in sizes), len(patch)


def tree_bytes(path: Path) -> int:
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file())


def run_long(tmp: Path, iterations: int, files: int, checkpoint: bool) -> tuple[list[Sample], Path, float]:
    print(f"creating a repository of {files:,} files and a {iterations}-stage goal…", flush=True)
    repo, goal = make_repo(tmp, files, iterations)
    metrics = tmp / "metrics.txt"
    env = child_env({"KILO_LOOP_BACKEND": "stub_agent:StubBackend", "STUB_AGENT_METRICS": str(metrics)})
    argv = [sys.executable, *loop_argv(repo, goal, iterations), *([] if checkpoint else ["--no-checkpoint"])]
    print(f"running {iterations} iterations{'' if checkpoint else ' with --no-checkpoint'}…", flush=True)
    started = time.perf_counter()
    run = run_child(argv, env)
    seconds = time.perf_counter() - started
    check_loop_run(run, repo, iterations, iterations)
    return read_samples(metrics), repo, seconds


def rows_for(early: Window, late: Window) -> list[Row]:
    time_ratio = late.cpu_ms / early.cpu_ms
    bytes_ratio = late.bytes_written / early.bytes_written
    rss_growth = late.rss_mb - early.rss_mb
    return [
        Row(f"loop CPU / iteration at {late.label}", f"{late.cpu_ms:.1f} ms", f"{early.cpu_ms:.1f} ms at {early.label}",
            f"{time_ratio:.2f}x", f"<= {TIME_TARGET}x", time_ratio <= TIME_TARGET),
        Row(f"loop wall / iteration at {late.label}", f"{late.wall_ms:.1f} ms",
            f"{early.wall_ms:.1f} ms at {early.label}", f"{late.wall_ms / early.wall_ms:.2f}x", "", None),
        Row(f"bytes written / iteration at {late.label}", f"{late.bytes_written / 1024:.1f} KB",
            f"{early.bytes_written / 1024:.1f} KB at {early.label}", f"{bytes_ratio:.2f}x", f"<= {BYTES_TARGET}x",
            bytes_ratio <= BYTES_TARGET),
        Row(f"RSS at {late.label}", f"{late.rss_mb:.1f} MB", f"{early.rss_mb:.1f} MB at {early.label}",
            f"{rss_growth:+.1f} MB", f"<= +{RSS_TARGET_MB:.0f} MB", rss_growth <= RSS_TARGET_MB),
    ]


def checkpoint_rows(repo: Path, at: Sequence[int]) -> list[Row]:
    (early_stored, early_patch), (late_stored, late_patch) = (stored_by_checkpoint(repo, n) for n in at)
    return [
        Row(f"checkpoint {n} adds to .git", f"{stored / 1024:.1f} KB", f"{patch / 1024:.1f} KB cumulative patch",
            f"{stored / patch:.2f}x" if patch else "", "", None)
        for n, stored, patch in ((at[0], early_stored, early_patch), (at[1], late_stored, late_patch))
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--files", type=int, default=500, help="committed files in the repository")
    parser.add_argument("--window", type=int, default=20, help="iterations averaged at each end")
    parser.add_argument("--early", type=int, default=100, help="the iteration compared with the last")
    parser.add_argument("--no-checkpoint", dest="checkpoint", action="store_false")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kilo-loop-bench-longrun-") as name:
        samples, repo, seconds = run_long(Path(name), args.iterations, args.files, args.checkpoint)
        half = args.window // 2
        early = window(samples, f"#{args.early}", args.early - half, args.window)
        late = window(samples, f"#{args.iterations}", args.iterations - args.window, args.window)
        table = rows_for(early, late)
        if args.checkpoint:
            table += checkpoint_rows(repo, (args.early, args.iterations - 1))
        run_dir = next((repo / ".kilocode-loop" / "runs").iterdir())
        state = run_dir / "state.json"
        print(f"{args.iterations} iterations in {seconds:.1f} s; run directory {tree_bytes(run_dir) / 1024:.0f} KB "
              f"(checkpoints/ {tree_bytes(run_dir / 'checkpoints') / 1024:.0f} KB), state.json "
              f"{state.stat().st_size / 1024:.1f} KB; .git/objects {tree_bytes(repo / '.git' / 'objects') / 1024:.0f} KB")
    print_table(table)
    return 0 if all(row.ok is not False for row in table) else 1


if __name__ == "__main__":
    sys.exit(main())
