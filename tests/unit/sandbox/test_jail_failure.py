"""A jailed program that never ran: bubblewrap's complaint becomes what failed and what to do."""

from __future__ import annotations

from kilo_loop.sandbox.failure import bwrap_complaint, jail_failure


def test_a_program_the_jail_cannot_see_is_named_with_the_fix() -> None:
    stderr = "bwrap: execvp /home/u/bin/kilo: No such file or directory\n"
    message = jail_failure(stderr, 1)
    assert message is not None and message.startswith("the jail could not start the agent (exit 1): bwrap: execvp")
    assert "`/home/u/bin/kilo` is not visible inside the jail" in message and "--sandbox off" in message


def test_a_mount_the_jail_cannot_make_points_at_doctor() -> None:
    message = jail_failure("bwrap: Can't bind mount /oldroot/x on /newroot/x: No such file or directory", 1)
    assert message is not None and "kilo-loop doctor" in message


def test_a_program_that_ran_and_failed_is_not_the_jails_failure() -> None:
    assert jail_failure("Error: provider unreachable\n", 1) is None
    assert bwrap_complaint("") is None
    assert bwrap_complaint("x\nbwrap: first\nbwrap: last\n") == "last"
