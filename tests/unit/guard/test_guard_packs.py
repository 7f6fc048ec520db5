"""Each rule pack on its own: what it denies, what it leaves alone, and that switching it off
(`guardPacks`) takes its rules out — and nothing else. Commands here are data, fed to the guard."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kilo_loop.commands.guard import guard_group, packs_listing
from kilo_loop.guard.packs import PACK_NAMES, PACKS, enabled_packs
from kilo_loop.guard.runtime import Guard
from kilo_loop.settings import ConfigError, load_settings

# pack -> (commands it denies, commands it allows)
PACK_CASES: dict[str, tuple[list[str], list[str]]] = {
    "git": (
        ["git push", "git reset --har", "git checkout -- .", "git restore src", "git rebase main",
         "git config alias.x '!sh'", "git clone ext::sh", "mv .git /tmp/g"],
        ["git status", "git diff --stat", "git restore --staged x", "git checkout -b topic", "git rebase --abort",
         "git config user.name Me", "mv src lib"],
    ),
    "filesystem": (
        ["rm -rf build", "rm -rf ~", "rimraf dist", "find / -delete", "ls | xargs rm", "chmod -R 777 ~",
         "rsync -a --delete a/ /srv/b/", "echo k >> ~/.ssh/authorized_keys", "cp hook .git/hooks/pre-commit"],
        ["rm -rf /tmp/x", "rm -f out.log", "find . -name '*.pyc' -delete", "chmod -R u+w build",
         "rsync -a --delete a/ /tmp/b/", "echo k >> notes.txt", "cp a.txt b.txt"],
    ),
    "system": (
        ["dd if=/dev/zero of=/dev/sda", "mkfs.ext4 /dev/sdb1", "lvremove vg/lv", "shutdown -h now", "reboot",
         "kill -9 -1", ":(){ :|:& };:", "crontab -r"],
        ["dd if=/dev/zero of=/tmp/blob count=1", "fdisk -l", "kill 1234", "crontab -l", "systemctl status nginx"],
    ),
    "publish": (
        ["npm publish", "pnpm publish", "yarn npm publish", "cargo publish", "twine upload dist/*", "lerna publish",
         "changeset publish", "gh release create v1"],
        ["npm publish --dry-run", "cargo publish --dry-run", "npm pack", "npm help publish", "gh release list"],
    ),
    "containers": (
        ["docker system prune -af", "docker volume rm data", "docker run -v /:/host alpine ls",
         "podman run --privileged x", "docker push app:1"],
        ["docker ps", "docker build -t app .", "docker run --rm -v /tmp/x:/x alpine ls", "docker compose up"],
    ),
    "kubernetes": (
        ["kubectl delete pod x", "kubectl -n prod delete svc y", "kubectl drain node", "helm uninstall rel"],
        ["kubectl get pods", "kubectl apply -f k8s/", "helm list"],
    ),
    "cloud": (
        ["terraform destroy", "terraform apply -destroy", "aws s3 rm s3://b/ --recursive",
         "aws ec2 terminate-instances --instance-ids i-1", "gcloud sql instances delete db"],
        ["terraform plan", "aws s3 ls", "aws s3 cp a s3://b/a", "gcloud config list"],
    ),
    "databases": (
        ["psql -c 'DROP TABLE t'", "mysql -e 'drop database d'", "sqlite3 a.db 'truncate table x'",
         "dropdb prod", "redis-cli flushall", "psql db <<'EOF'\ndelete from users;\nEOF"],
        ["psql -c 'select 1'", "mysql -e 'show tables'", "sqlite3 a.db .schema", "redis-cli get k",
         "psql -c 'delete from users where id = 3'"],
    ),
    "remote": (
        ["ssh host rm -rf /srv", "ssh host 'git push'", "kubectl exec pod -- rm -rf /data"],
        ["ssh host uptime", "ssh host 'ls -la'", "kubectl exec pod -- ls"],
    ),
}


def test_every_pack_has_cases() -> None:
    assert set(PACK_CASES) == set(PACK_NAMES)


@pytest.mark.parametrize("pack", PACK_NAMES)
def test_pack_denies_its_commands_and_allows_the_rest(pack: str) -> None:
    guard = Guard()
    denies, allows = PACK_CASES[pack]
    for command in denies:
        decision = guard.check_command(command, "/repo")
        # remote commands are denied by the pack that owns the command run there
        assert decision.denied and (decision.pack in (pack, None) or pack == "remote"), f"{command!r} -> {decision}"
    for command in allows:
        decision = guard.check_command(command, "/repo")
        assert not decision.denied, f"{pack}: {command!r} -> {decision}"


@pytest.mark.parametrize("pack", [p for p in PACK_NAMES if p != "remote"])
def test_a_pack_switched_off_takes_out_its_rules_only(pack: str) -> None:
    off = Guard(packs={pack: False})
    for command in PACK_CASES[pack][0]:
        if pack == "git" and command.startswith("mv "):
            continue
        decision = off.check_command(command, "/tmp/work")
        assert not decision.denied or decision.pack != pack, (command, decision)
    assert off.check_command("c=$X; $c", "/repo").rule == "unknown-command"  # never switchable


def test_remote_pack_off_leaves_remote_commands_unjudged() -> None:
    assert Guard().check_command("ssh host rm -rf /srv").denied
    assert not Guard(packs={"remote": False}).check_command("ssh host rm -rf /srv").denied
    assert Guard(packs={"remote": False}).check_command("ssh host \"$CMD\"").rule == "unknown-command"


def test_unknown_or_non_boolean_pack_switches_are_clear_errors() -> None:
    with pytest.raises(ValueError, match=r"unknown pack.*kube"):
        Guard(packs={"kube": False})
    with pytest.raises(ValueError, match="true or false"):
        enabled_packs({"git": "no"})  # type: ignore[dict-item]
    assert [p.name for p in enabled_packs(None)] == list(PACK_NAMES)


def test_rules_are_data_tables() -> None:
    for pack in PACKS:
        assert pack.rules or pack.text_rules
        for rule in pack.rules:
            assert rule.id and rule.reason and rule.names, rule


def _project(tmp_path: Path, config: dict[str, object]) -> Path:
    (tmp_path / ".kilocode-loop").mkdir()
    (tmp_path / ".kilocode-loop" / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return tmp_path


def test_guard_packs_comes_from_config_json(tmp_path: Path) -> None:
    project = _project(tmp_path, {"guardPacks": {"kubernetes": False}})
    assert load_settings({}, project).guard_packs == {"kubernetes": False}
    (tmp_path / "bad").mkdir()
    bad = _project(tmp_path / "bad", {"guardPacks": {"kube": False}})
    with pytest.raises(ConfigError, match="kube"):
        load_settings({}, bad)


def test_cli_lists_packs_and_their_state(tmp_path: Path) -> None:
    project = _project(tmp_path, {"guardPacks": {"kubernetes": False}})
    runner = CliRunner()
    result = runner.invoke(guard_group, ["packs", "--json", "--cwd", str(project)])
    assert result.exit_code == 0, result.output
    listing = {p["name"]: p for p in json.loads(result.output)}
    assert list(listing) == list(PACK_NAMES)
    assert listing["kubernetes"]["enabled"] is False and listing["git"]["enabled"] is True
    assert "git-push" in listing["git"]["rules"]
    text = runner.invoke(guard_group, ["packs", "--cwd", str(project)]).output
    assert any(line.startswith("kubernetes") and " off " in line for line in text.splitlines())
    check = runner.invoke(guard_group, ["check", "--cwd", str(project), "kubectl delete pod x"])
    assert check.exit_code == 0, check.output  # the project switched the pack off
    assert packs_listing(Guard())[0]["name"] == "git"
