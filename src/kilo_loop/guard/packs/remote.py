"""remote shells: commands run on another machine (`ssh host CMD`, `kubectl exec … -- CMD`) are
judged by every other pack as if they ran here; with this pack off they are not looked at."""

from __future__ import annotations

from kilo_loop.guard.packs.rules import Pack, Rule

PACK = Pack(
    name="remote",
    title="remote shells: ssh/kubectl exec commands judged like local ones; scp onto system paths",
    rules=(
        Rule("remote-copy", "copies onto a remote host's root or system directory", ("scp",),
             check=lambda c, p: "" if any(
                 ":" in a and a.split(":", 1)[1] in ("/", "/etc", "/usr", "/bin", "~", "/root", "~/.ssh")
                 for a in c.args[-1:]) else None),
        Rule("remote-copy", "adds a key to a remote host's authorized_keys", ("ssh-copy-id",),
             unless=("-n", "--help")),
    ),
)
