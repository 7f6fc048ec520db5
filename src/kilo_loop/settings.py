"""One settings model. Precedence: CLI flags > environment (KILO_LOOP_*) >
<project>/.kilocode-loop/config.json > built-in defaults.

config.json may have been written for the original tool: its key names are accepted as
aliases, and a key this port does not know is a one-line warning (naming the key and the
file), not an error. A known key with a wrong value still stops the run.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal

import click
from pydantic import Field, TypeAdapter, ValidationError, ValidationInfo, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, SettingsError

from kilo_loop.durations import parse_duration
from kilo_loop.errors import ConfigError
from kilo_loop.project_config import config_path, read_config_file
from kilo_loop.review_roles import ReviewConfigError, role_specs

HitlMode = Literal["always", "on-question", "off"]
RuntimeMode = Literal["auto", "kilo", "opencode", "claude", "codex", "cursor", "gemini"]
Transport = Literal["serve", "run"]


__all__ = ["ConfigError", "Settings", "load_settings"]


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).replace("-", "_").lower()


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KILO_LOOP_", extra="forbid", validate_default=True)

    # Goal
    goal: Path | None = None
    goal_text: str | None = None
    iterations: int = Field(5, ge=1, le=100_000)
    # Execution
    project: Path | None = None
    agent: str | None = None
    model: str | None = None
    variant: str | None = None
    thinking: bool = False
    auto: bool = True
    shared_context: bool = False
    hitl: HitlMode = "on-question"
    runtime: RuntimeMode = "auto"
    kilo_bin: str | None = None
    isolate_home: bool = False  # the agent's HOME/XDG_* under the run directory
    # kilo/opencode: how an OpenAI-compatible endpoint (KILO_LOOP_OPENAI_* / OPENAI_*) reaches the CLI
    provider_config_mode: Literal["auto", "legacy_env", "none"] = "auto"
    usage_db: bool = True  # read each session's usage from the CLI's own database (kilo.db) too
    preflight: bool = True  # before a real run, check the agent CLIs accept the loop's flags (doctor.preflight)
    # serve: one warm `<cli> serve` per run, the loop answering every permission; run: `<cli> run` each turn
    transport: Transport = "serve"
    backend: str | None = None  # module:attr of a custom AgentBackend (KILO_LOOP_BACKEND)
    max_iteration_minutes: float = Field(30.0, gt=0)
    context_warn_tokens: int = Field(120_000, ge=0)
    prompt_extra: str | None = None
    # Verification & safety
    verify: str | None = None
    verify_timeout_minutes: float = Field(10.0, gt=0)
    checkpoint: bool = True
    guard: bool = True
    # The jail (bubblewrap) around every process that runs code the agent controls; see sandbox/.
    sandbox: Literal["auto", "bwrap", "off"] = "auto"
    # The jail's network: the machine's (full), or its own with the loop's proxy as the only way out.
    sandbox_network: Literal["full", "model", "none"] = "full"
    sandbox_allow_hosts: list[str] = Field(default_factory=list)  # `model`: hosts beyond the model's
    # Handing the work over (finish/): the loop, never the agent, commits each finished stage
    finish: Literal["none", "commit", "branch", "pr"] = "none"
    commit_author: str | None = None  # "Name <email>" for the loop's commits (default: git's own identity)
    remote: str = "origin"  # --finish pr: where the run's branch is pushed
    forge: Literal["auto", "github", "gitlab", "gitea"] = "auto"  # auto: from the remote's host
    forge_url: str | None = None  # the forge's REST API base (GitHub Enterprise, self-hosted GitLab/Gitea)
    forge_repo: str | None = None  # OWNER/REPO when the remote's URL does not say (a local path, an SSH alias)
    issue_comments: bool = False  # a goal from an issue: comment on it as each stage is committed
    guard_stop: bool = False
    # A stage whose diff weakens its tests (tamper/): block = not done though verify passed; warn = say so only.
    tamper: Literal["block", "warn", "off"] = "block"
    max_guard_blocks: int = Field(3, ge=1)
    guard_deny: list[str] = Field(default_factory=list)
    guard_allow: list[str] = Field(default_factory=list)
    guard_packs: dict[str, bool] = Field(default_factory=dict)  # rule packs switched on/off by name
    redact: bool = True
    # Known secrets masked by value (redact/_known.py): dotenv-style files of the project
    # (globs; [] to opt out) and values given outright (also KILO_LOOP_MASK, one per line)
    mask_files: list[str] = Field(default_factory=lambda: [".env*"])
    mask_values: list[str] = Field(default_factory=list, repr=False)
    max_cost: float | None = Field(None, ge=0)
    max_tokens: int | None = Field(None, ge=0)
    max_stale_iterations: int | None = Field(3, ge=1)
    # Going in circles (loop/circles; 0 turns a detector off): the same verify failure K times in a row,
    # the same tool call N times in one session, M failing tool calls in a row
    max_same_failure: int = Field(3, ge=0)
    max_repeat_calls: int = Field(8, ge=0)
    max_failed_calls: int = Field(12, ge=0)
    retry: bool = True
    max_retries: int = Field(3, ge=0, le=100)
    retry_delay: int = Field(2000, ge=0)
    retry_max_delay: int = Field(60_000, ge=0)
    max_quota_wait: float | None = Field(12 * 3600.0, ge=0)  # seconds (90s, 5m, 6h); None: no bound
    answer_timeout: float | None = Field(None, ge=0)  # seconds; None: wait for the answer
    # true (the seed's single reviewer) or {"roles": ["code", "test", {"role": "security", "model": …}]}
    review: bool | dict[str, Any] = False
    review_agent: str | None = None
    review_wave: bool = False
    review_retries: int | None = Field(None, ge=0, le=3)
    review_gate: Literal["always", "auto", "off"] = "auto"
    # The loop-policy answer for large stages (asked at pre-flight; manual, 0, when nobody answers).
    review_large_retries: int | None = Field(None, ge=0, le=3)
    auto_fresh_tokens: int | None = Field(None, ge=1)
    sync_goal: bool = True
    force: bool = False
    notify: list[str] = Field(default_factory=list)
    # Dashboard
    port: int = Field(7999, ge=0, le=65535)
    host: str | None = None
    lan: bool = False
    local: bool = False
    keep_open: bool = False
    keep_open_for: float | None = Field(None, gt=0)  # seconds; "90s", "10m", "1h" accepted
    dashboard: bool = True
    # Utility
    dry_run: bool = False
    # the dry run's simulated reviewer: pass (one low nit), block (2 → 1 → 0 blocking), thrash (1 every round)
    dry_run_review: Literal["pass", "block", "thrash"] = "pass"
    resume: str | None = None
    run_id: str | None = None
    quiet: bool = False
    no_color: bool = False
    confirm: bool = True

    @field_validator("keep_open_for", "answer_timeout", "max_quota_wait", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none", "off")):
            return None
        return parse_duration(value)

    @field_validator("notify", "guard_deny", "guard_allow", "mask_files", mode="before")
    @classmethod
    def _split_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [item for item in re.split(r"[\s,]+", value) if item]
        return value

    @field_validator("commit_author", mode="after")
    @classmethod
    def _author(cls, value: str | None) -> str | None:
        """`Name <email>`, checked before the run starts (not at its first commit)."""
        from kilo_loop.finish.commits import FinishError, author_env

        try:
            author_env(value)
        except FinishError as exc:
            raise ValueError(str(exc)) from None
        return value

    @field_validator("guard_deny", "guard_allow", mode="after")
    @classmethod
    def _valid_patterns(cls, value: list[str], info: ValidationInfo) -> list[str]:
        """A pattern RE2 refuses stops the run here, before its run directory exists."""
        if value:  # only when set: the guard imports the shell parser
            from kilo_loop.guard.runtime import compile_patterns

            compile_patterns(value, "guardDeny" if info.field_name == "guard_deny" else "guardAllow")
        return value

    @field_validator("review", mode="after")
    @classmethod
    def _review_roles(cls, value: bool | dict[str, Any]) -> bool | dict[str, Any]:
        if isinstance(value, dict):
            try:
                role_specs(value)
            except ReviewConfigError as exc:
                raise ValueError(str(exc)) from exc
        return value

    @property
    def review_on(self) -> bool:
        return bool(self.review) or self.review_wave

    @field_validator("guard_packs")
    @classmethod
    def _known_packs(cls, value: dict[str, bool]) -> dict[str, bool]:
        if value:
            from kilo_loop.guard.packs import PACK_NAMES  # only when set: the packs import the shell parser

            unknown = sorted(set(value) - set(PACK_NAMES))
            if unknown:
                raise ValueError(f"unknown guard pack(s) {', '.join(unknown)}; the packs are {', '.join(PACK_NAMES)}")
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, ProjectConfigSource(settings_cls, _CONFIG_FILE.get()))

    @property
    def session_mode(self) -> str:
        return "continue" if self.shared_context else "fresh"


# The config file in force while load_settings builds a Settings (pydantic-settings builds
# sources inside the constructor, so the path travels in a context variable).
_CONFIG_FILE: ContextVar[Path | None] = ContextVar("kilo_loop_config_file", default=None)

_LIST_FIELDS = {"notify", "guard_deny", "guard_allow", "mask_files"}
_DURATION_FIELDS = {"keep_open_for", "answer_timeout", "max_quota_wait"}  # "90s", "10m", "6h", "off"

# Keys the original tool's config.json used (snake_cased) that map onto our fields.
_CONFIG_ALIASES = {
    "session_mode": "shared_context",
    "default_verify": "verify",
    "verify_command": "verify",
    "iterations_default": "iterations",
    "context_threshold": "context_warn_tokens",
    "context_threshold_tokens": "context_warn_tokens",
    "context_warn_threshold": "context_warn_tokens",
    "context_tokens_threshold": "context_warn_tokens",
    "max_cost_usd": "max_cost",
    "mode": "agent",  # seed 001's compatibility alias for the agent
}

# Unknown keys met while building a Settings (reported by load_settings once it is built).
_UNKNOWN_KEYS: ContextVar[list[str] | None] = ContextVar("kilo_loop_unknown_config_keys", default=None)
# Other warnings met while reading config.json (an old name and its new one set apart, …).
_CONFIG_NOTES: ContextVar[list[str] | None] = ContextVar("kilo_loop_config_notes", default=None)

MODE_ENV, AGENT_ENV = "KILO_LOOP_MODE", "KILO_LOOP_AGENT"


def mode_alias(environ: Mapping[str, str]) -> tuple[str | None, str | None]:
    """Seed 001: KILO_LOOP_MODE is the old name of KILO_LOOP_AGENT. (the agent it names when
    KILO_LOOP_AGENT is unset, a warning when both are set and disagree: KILO_LOOP_AGENT wins)."""
    mode, agent = environ.get(MODE_ENV, "").strip(), environ.get(AGENT_ENV, "").strip()
    if not mode:
        return None, None
    if not agent:
        return mode, None
    if agent != mode:
        return None, (f"kilo-loop: warning: {MODE_ENV}={mode!r} and {AGENT_ENV}={agent!r} disagree; "
                      f"{AGENT_ENV} wins ({MODE_ENV} is its old name: unset it)")
    return None, None


def _config_value(key: str, value: Any) -> tuple[str, Any]:
    field = _CONFIG_ALIASES.get(key, key)
    if key == "session_mode":
        if value not in ("continue", "fresh"):
            raise ConfigError(f"key 'sessionMode': expected 'continue' or 'fresh', got {value!r}")
        return field, value == "continue"
    return field, value


class ProjectConfigSource(PydanticBaseSettingsSource):
    """Values from .kilocode-loop/config.json, camelCase or snake_case keys, each validated on its own
    so a wrong one is reported with the file and the key."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path | None) -> None:
        super().__init__(settings_cls)
        self._path = path

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        raw = read_config_file(self._path) if self._path is not None else {}
        values = {name: value for name, value in (self._field(k, v) for k, v in raw.items()) if name}
        if "agent" in raw and "mode" in raw:  # the new name wins whatever the order of the keys
            values["agent"] = self._field("agent", raw["agent"])[1]
            notes = _CONFIG_NOTES.get()
            if notes is not None and raw["agent"] != raw["mode"]:
                notes.append(f"kilo-loop: warning: {self._path}: keys 'mode' ({raw['mode']!r}) and 'agent' "
                             f"({raw['agent']!r}) disagree; 'agent' wins ('mode' is its old name: remove it)")
        return values

    def _field(self, key: str, value: Any) -> tuple[str, Any]:
        if key.startswith(("$", "_")):
            return "", None  # comments / schema references
        try:
            name, value = _config_value(_snake(key), value)
        except ConfigError as exc:
            raise ConfigError(f"{self._path}: {exc}") from exc
        fields = self.settings_cls.model_fields
        if name not in fields:
            unknown = _UNKNOWN_KEYS.get()
            if unknown is not None:
                unknown.append(key)
            return "", None
        try:
            if name in _DURATION_FIELDS and isinstance(value, str):
                value = Settings._duration(value)
            listy = name in _LIST_FIELDS
            TypeAdapter(fields[name].annotation or Any).validate_python(Settings._split_list(value) if listy else value)
        except ValidationError as exc:
            problem = exc.errors()[0]["msg"]
            raise ConfigError(f"{self._path}: key {key!r}: {problem} (got {value!r})") from exc
        except ValueError as exc:  # a duration that does not parse
            raise ConfigError(f"{self._path}: key {key!r}: {exc}") from exc
        return name, value


def _env_name(field: str) -> str | None:
    """The KILO_LOOP_* variable that set `field`, if one did (any case, as pydantic-settings reads it)."""
    wanted = f"kilo_loop_{field}"
    return next((name for name in os.environ if name.lower() == wanted), None) if field else None


def _source_of(field: str, cli_values: dict[str, Any], path: Path | None) -> str:
    """Where a refused value came from, as the person typed it: the flag, the variable or the config key."""
    if field in cli_values:
        return "--" + field.replace("_", "-")
    env = _env_name(field)
    if env:
        return env
    camel = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), field)
    return f"{path}: key {camel!r}" if path and path.is_file() and field else (field or "settings")


_BOUNDS = {"greater_than_equal": ("ge", "must be at least"), "less_than_equal": ("le", "must be at most"),
           "greater_than": ("gt", "must be more than"), "less_than": ("lt", "must be less than")}


def plain_problem(kind: str, context: dict[str, Any]) -> str | None:
    """A bound pydantic words as "Input should be greater than or equal to 1", said plainly."""
    key, words = _BOUNDS.get(kind, ("", ""))
    if key not in context:
        return None
    bound = context[key]
    return f"{words} {int(bound) if isinstance(bound, float) and bound.is_integer() else bound}"


def unknown_key_warning(path: Path, key: str) -> str:
    return f"kilo-loop: warning: {path}: unknown key {key!r} ignored (not a kilo-loop setting)"


def _warn(message: str) -> None:
    click.echo(message, err=True)


def load_settings(
    cli_values: dict[str, Any], project: Path | None, warn: Callable[[str], None] = _warn
) -> Settings:
    """Build the settings for a project; `cli_values` holds only flags the user gave. Each unknown
    config.json key is passed to `warn` as one line."""
    path = config_path(project) if project else None
    token = _CONFIG_FILE.set(path)
    unknown: list[str] = []
    unknown_token = _UNKNOWN_KEYS.set(unknown)
    notes: list[str] = []
    notes_token = _CONFIG_NOTES.set(notes)
    mode, conflict = mode_alias(os.environ)
    if conflict:
        notes.append(conflict)
    if mode is not None and "agent" not in cli_values:  # the environment's level: over config.json
        cli_values = {**cli_values, "agent": mode}
    try:
        settings = Settings(**cli_values)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else ""
        problem = plain_problem(first["type"], first.get("ctx") or {}) or str(first["msg"]).removeprefix("Value error, ")
        raise ConfigError(f"{_source_of(field, cli_values, path)}: {problem}") from exc
    except SettingsError as exc:  # a KILO_LOOP_* variable of a list or object setting that is not JSON
        found = re.search(r'field "(\w+)"', str(exc))
        field = found.group(1) if found else ""
        raise ConfigError(f"{_env_name(field) or 'a KILO_LOOP_* variable'}: expected a JSON value "
                          f"(a list: '[\"a\", \"b\"]', one string: '\"a b\"', an object: '{{\"k\": true}}')") from exc
    finally:
        _CONFIG_FILE.reset(token)
        _UNKNOWN_KEYS.reset(unknown_token)
        _CONFIG_NOTES.reset(notes_token)
    for key in unknown:
        assert path is not None
        warn(unknown_key_warning(path, key))
    for note in notes:
        warn(note)
    return settings
