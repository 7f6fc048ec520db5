"""The commit message of a finished stage: its title, then its receipt, then the trailers that tie the
commit to the run and the stage (and let a resumed run see the stage is already committed). Pure."""

from __future__ import annotations

from collections.abc import Sequence

from kilo_loop.run.receipts import StageReceipt

RUN_TRAILER = "Kilo-Loop-Run"
STAGE_TRAILER = "Kilo-Loop-Stage"
MAX_FILES_LISTED = 20


def commit_message(receipt: StageReceipt, run_id: str, files: Sequence[str]) -> str:
    """`<stage title>`, a blank line, the receipt, a blank line, the trailers."""
    title = " ".join(receipt.title.split()) or receipt.stage_id
    body = [*_changed(files), *_checked(receipt), *_spent(receipt)]
    trailers = [f"{RUN_TRAILER}: {run_id}", f"{STAGE_TRAILER}: {receipt.stage_id}"]
    return "\n".join([title, "", *body, "", *trailers]) + "\n"


def _changed(files: Sequence[str]) -> list[str]:
    shown = [f"  {name}" for name in files[:MAX_FILES_LISTED]]
    more = len(files) - MAX_FILES_LISTED
    return [f"Changed {len(files)} file(s):", *shown, *([f"  … and {more} more"] if more > 0 else [])]


def _checked(receipt: StageReceipt) -> list[str]:
    verify = (f"Verify: `{receipt.verify_command}` {receipt.verify}" if receipt.verify_command
              else "Verify: none (the stage has no verify command)")
    return [verify, f"Review: {receipt.review}"]


def _spent(receipt: StageReceipt) -> list[str]:
    seconds = round(receipt.duration_ms / 1000)
    numbers = ", ".join(str(n) for n in receipt.iterations) or "—"
    return [f"Iterations: {len(receipt.iterations)} ({numbers}) · {seconds} s · {receipt.tokens:,} tokens · "
            f"${receipt.cost:.4f}"]
