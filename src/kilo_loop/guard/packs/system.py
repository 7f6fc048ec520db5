"""system: raw disk writes, formatting and volume removal, power state, killing every process,
fork bombs."""

from __future__ import annotations

from kilo_loop.guard.lazy_regex import LazyRegex
from kilo_loop.guard.packs.paths import PathPolicy, absolute, is_block_device, resolved, system_file
from kilo_loop.guard.packs.rules import Pack, Rule, TextRule, operands
from kilo_loop.guard.shell.model import SHELL_PID, UNKNOWN, SimpleCommand, has_option, normalize_path

_INFO = ("-l", "--list", "-h", "--help", "-V", "--version", "-s", "--show")


_DD = ("dd", "dcfldd", "dc3dd", "ddrescue", "ddpt", "sg_dd")


def _device_target(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    if cmd.name in _DD and cmd.name != "ddrescue":
        targets = [a[3:] for a in cmd.args if a.startswith("of=")]
    elif cmd.name in ("tee", "sponge"):
        targets = operands(cmd.args)
    else:
        targets = operands(cmd.args)[-1:]
    for target in targets:
        for path in absolute(target, cmd.cwds) or [target]:
            if is_block_device(path) or is_block_device(resolved(path)):
                return f"it writes raw data onto the block device {path}"
            if system_file(path):
                return f"it writes {path}, a kernel or system file"
    return None


_MINUS_ONE = LazyRegex(r"-0*1")


def _kills_everything(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    """`kill -9 -1`, `kill -- -1`, `kill -s KILL -1`: pid -1 (a first `-1` alone is a signal number);
    pid 0 (and `-0`) is the caller's own process group, the loop included."""
    if any(_MINUS_ONE.fullmatch(a) for a in cmd.args[1:]):  # (`-01` is -1 too)
        return "pid -1 is every process the user may signal"
    if any(SHELL_PID in a for a in cmd.args):
        return "it signals the shell running it or the agent that started it ($$, $PPID)"
    if any(a.startswith("-") and UNKNOWN in a for a in cmd.args):
        return "a negative pid is a whole process group, and this one is only known at run time"
    pids = operands(cmd.args, ("-s", "-n", "--signal"))
    if "0" in pids or "-0" in pids:  # (operands: `-0` counts only after `--`; `kill -0 PID` only checks)
        return "pid 0 is the whole process group, the agent and the loop included"
    return "pid 1 is init" if cmd.args[-1:] == ("1",) and len(cmd.args) > 1 else None


def _formats(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    if cmd.name == "parted":  # `-s` is --script there: only a listing writes nothing
        return None if not cmd.args or has_option(cmd.args, "-l", "--list", "-h", "--help", "-v", "--version") or \
            operands(cmd.args)[1:2] in (["print"], ["p"]) else ""
    if not cmd.args or has_option(cmd.args, *_INFO) or set(cmd.args) & set(_INFO):
        return None
    return ""




def _kills_by_name(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    """`pkill PATTERN`, `killall NAME`: every matching process dies, the agent's and the loop's own included
    when the pattern matches them; signal 0 only checks."""
    if has_option(cmd.args, "-l", "--list", "-V", "--version", "-h", "--help") and cmd.name != "pkill":
        return None
    if "-0" in cmd.args or any(a in ("--signal=0", "-s0") for a in cmd.args) or (
            "-s" in cmd.args and cmd.args[cmd.args.index("-s") + 1:][:1] == ("0",)):
        return None
    return "it kills every process whose name or command line matches; kill the PID you started (`kill PID`)"


def _firewall_flush(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    if cmd.name == "nft":
        found = operands(cmd.args)
        return "" if found[:1] in (["flush"], ["delete"]) else None
    if cmd.name in ("ufw",):
        return "" if operands(cmd.args)[:1] in (["disable"], ["reset"]) else None
    drops = any(a in ("-P", "--policy") for a in cmd.args) and any(a in ("DROP", "REJECT") for a in cmd.args)
    return "" if drops or has_option(cmd.args, "-F", "--flush", "-X", "--delete-chain", "-Z") else None


def _root_mount(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    found = operands(cmd.args, ("-o", "--options", "-t", "--types", "-O"))
    if cmd.name == "umount":
        if has_option(cmd.args, "-a", "--all", "-A", "--all-targets"):
            return "it unmounts every filesystem"
        return "it unmounts a system filesystem" if any(normalize_path(f) in _SYSTEM_MOUNTS for f in found
                                                         if f.startswith("/")) else None
    options = [a.split("=", 1)[1] if "=" in a else cmd.args[i + 1] if i + 1 < len(cmd.args) else ""
               for i, a in enumerate(cmd.args) if a.split("=", 1)[0] in ("-o", "--options")]
    remount = any("remount" in o for o in options) or "--remount" in cmd.args
    return "it remounts a filesystem, changing how the running system sees it" if remount else None


_SYSTEM_MOUNTS = frozenset({"/", "/boot", "/usr", "/var", "/home", "/etc", "/proc", "/sys", "/dev", "/run"})


_POWER = ("shutdown", "reboot", "halt", "poweroff", "kexec", "telinit")
PACK = Pack(
    name="system",
    title="system: raw disks, filesystems and volumes, power state, killing all processes, fork bombs",
    rules=(
        Rule("raw-disk-write", "writes raw data onto a block device",
             (*_DD, "cp", "mv", "install", "tee", "sponge", "ln"), check=_device_target),
        Rule("raw-disk-write", "formats, wipes or repartitions a disk",
             ("mkfs", "mke2fs", "mkswap", "wipefs", "blkdiscard", "sgdisk", "sfdisk", "parted", "fdisk", "gdisk",
              "cfdisk", "mkfs.ext2", "mkfs.ext3", "mkfs.ext4", "mkfs.xfs", "mkfs.btrfs", "mkfs.vfat", "mkfs.fat",
              "mkfs.ntfs", "mkfs.exfat", "mkntfs", "badblocks", "hdparm", "nvme", "sdelete", "mkfs.f2fs",
              "mkfs.minix", "mkfs.jfs", "mkfs.reiserfs", "mkfs.msdos", "mkfs.bfs", "mkfs.cramfs", "mkfs.udf",
              "mkfs.hfsplus", "mkfs.erofs", "mkdosfs", "mkexfatfs", "mke2fs", "newfs", "zerofree"), check=_formats),
        Rule("raw-disk-write", "erases or repartitions a disk", ("diskutil",), check=lambda c, p: "" if any(
            w.lower().startswith(("erase", "zero", "random", "secure", "partition", "reformat", "apfs"))
            for w in operands(c.args)[:1]) else None),
        Rule("volume-remove", "deletes a btrfs subvolume or device", ("btrfs",),
             check=lambda c, p: "" if operands(c.args)[:2] in (["subvolume", "delete"], ["device", "delete"],
                                                               ["device", "remove"], ["subvolume", "del"]) else None),
        Rule("volume-remove", "a bind mount makes one path stand for another", ("mount",),
             check=lambda c, p: "" if any(a in ("--bind", "--rbind", "-B", "--move", "-M") or
                                          (a.startswith("bind") or ",bind" in a) for a in c.args) else None),
        Rule("user-remove", "deletes a user and their home directory", ("userdel", "deluser"),
             check=lambda c, p: "" if has_option(c.args, "-r", "--remove", "--remove-home", "--remove-all-files")
             else None),
        Rule("volume-remove", "removes or shrinks a logical volume, volume group or pool",
             ("lvremove", "vgremove", "pvremove", "lvreduce", "vgreduce", "lvresize", "pvmove", "zpool", "zfs",
              "mdadm", "cryptsetup", "dmsetup"), check=lambda c, p: "" if c.name.startswith(("lv", "vg", "pv"))
             or (operands(c.args)[:1] and operands(c.args)[0] in (
                 "destroy", "remove", "remove_all", "luksFormat", "luksErase", "erase", "wipe_table", "labelclear", "create",
                 "format", "rollback")) or has_option(c.args, "--zero-superblock", "--create") else None),
        Rule("power-state", "shuts down or reboots the machine", _POWER, unless=("--help",)),
        Rule("power-state", "reboots the machine", ("launchctl",), words=("reboot",)),
        Rule("power-state", "shuts down or reboots the machine", ("systemctl", "loginctl"),
             check=lambda c, p: "" if set(operands(c.args)[:1]) & {
                 "poweroff", "reboot", "halt", "kexec", "suspend", "hibernate", "rescue", "emergency",
                 "soft-reboot", "isolate", "terminate-user", "kill-user"} else None),
        Rule("power-state", "shuts down or reboots the machine", ("systemctl",),
             check=lambda c, p: "" if operands(c.args)[:1] and operands(c.args)[0] in (
                 "start", "restart", "isolate", "reload-or-restart", "try-restart") and any(
                 t.split(".")[0] in ("reboot", "poweroff", "halt", "kexec", "rescue", "emergency", "shutdown",
                                     "soft-reboot", "sleep", "suspend", "hibernate") for t in operands(c.args)[1:])
             else None),
        Rule("power-state", "shuts down or reboots the machine through D-Bus", ("busctl", "dbus-send", "gdbus",
                                                                                 "qdbus"),
             check=lambda c, p: "" if any(w in a for a in c.args for w in (
                 "PowerOff", "Reboot", "Halt", "KExec", "Suspend", "Hibernate", "RebootWithFlags",
                 "PowerOffWithFlags")) else None),
        Rule("kernel-module", "loads or removes a kernel module", ("insmod", "rmmod", "modprobe", "kldload"),
             unless=("-n", "--dry-run", "--show-depends", "-c", "--showconfig", "-D")),
        Rule("power-state", "switches the machine's runlevel", ("init",),
             check=lambda c, p: "" if set(c.args) & {"0", "1", "6", "s", "S"} else None),
        Rule("kill-all", "signals every process", ("kill",), check=_kills_everything),
        Rule("kill-by-name", "kills processes by name or pattern", ("killall", "pkill", "skill", "slay", "pkill2"),
             check=_kills_by_name),
        Rule("kill-all", "kills every process", ("killall5", "killall", "pkill"),
             check=lambda c, p: "" if c.name == "killall5" or (has_option(c.args, "-u", "--user") and
                                                                c.name in ("pkill", "killall") and
                                                                not operands(c.args, ("-u", "--user", "-s", "--signal")))
             or operands(c.args, ("-s", "--signal", "-u", "--user")) in ([".*"], ["."], ["-1"]) else None),
        Rule("crontab-remove", "removes every cron job", ("crontab",), flags=("-r",)),
        Rule("network-cut", "flushes the firewall or sets it to drop everything, which can cut the machine off",
             ("iptables", "ip6tables", "iptables-legacy", "iptables-nft", "nft", "ufw"), check=_firewall_flush),
        Rule("network-cut", "takes a network interface down or flushes its addresses", ("ip", "ifconfig", "ifdown",
                                                                                       "nmcli"),
             check=lambda c, p: "" if c.name == "ifdown" or (c.name == "ifconfig" and "down" in c.args) or (
                 c.name == "ip" and ("down" in c.args or operands(c.args)[1:2] == ["flush"])) or (
                 c.name == "nmcli" and ("down" in c.args or "off" in c.args or "delete" in c.args)) else None),
        Rule("account-change", "removes or locks a password, which can lock everyone out", ("passwd", "usermod",
                                                                                            "chpasswd"),
             check=lambda c, p: "" if c.name == "chpasswd" or has_option(c.args, "-d", "--delete", "-l", "--lock",
                                                                          "-L", "-e", "--expire") else None),
        Rule("volume-remove", "unmounts or remounts a system filesystem", ("umount", "mount"), check=_root_mount),
        Rule("volume-remove", "turns off swap, which can make the machine run out of memory", ("swapoff",),
             unless=("--help", "--version")),
        Rule("crontab-install", "replaces the cron table with jobs that run later, outside the loop", ("crontab",),
             unless=("-l", "-r", "-e"), check=lambda c, p: "" if operands(c.args, ("-u",)) else None),
    ),
    text_rules=(
        TextRule("fork-bomb", "an endless loop starting background processes exhausts the machine",
                 LazyRegex(r"(?:\b(?:while|until)\s+(?:true|:|\[\s*1\s*\]|\(\(\s*1\s*\)\))|\bfor\s*\(\(\s*[^;()]*;\s*;"
                           r"[^;()]*\)\))\s*;?\s*do\b[^;&|]{0,256}&(?!&)\s*;?\s*done\b")),
        TextRule("fork-bomb", "a fork bomb exhausts the machine's processes",
                 # bounded name and body, anchored at a name boundary: linear on long input
                 # (`name() {…}`, `function name {…}`, a subshell body `name() (…)`; `name|name` or `name & name`)
                 LazyRegex(r"(?<![\w:.])(?:function\s+([\w:.]{1,64})(?:\s*\(\s*\))?|([\w:.]{1,64})\s*\(\s*\))"
                           r"\s*[{(][^})]{0,256}?(?(1)\1|\2)\s*[|&]\s*(?(1)\1|\2)(?![\w:.])")),
    ),
)
