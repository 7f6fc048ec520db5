"""Provider injection (issue 11, seed 001): an OpenAI-compatible endpoint for kilo / opencode.

The endpoint comes from `KILO_LOOP_OPENAI_BASE_URL` / `KILO_LOOP_OPENAI_API_KEY` (the loop's own
names) or, when those are unset, the global `OPENAI_BASE_URL` / `OPENAI_API_KEY`. How it reaches
the CLI is `providerConfigMode`:

- `auto` (default): when a base URL is set, a provider named `loop` goes into the child's inline
  config whose options are `{env:KILO_LOOP_OPENAI_BASE_URL}` / `{env:KILO_LOOP_OPENAI_API_KEY}`
  references. The CLI resolves them at launch from its own environment, so the key is only ever
  in the child's environment, never in the config JSON (which the loop may log or show).
  Models are used as `--model loop/<model>`; each such model the run names is declared.
- `legacy_env`: `KILO_PROVIDER_TYPE=openai` and `KILO_OPENAI_API_KEY` / `KILO_OPENAI_BASE_URL`
  in the child's environment, for older kilo releases that read those.
- `none`: nothing; the CLI's own persisted auth and config apply.

The API spec (seed 001) picks the provider package the CLI loads: `KILO_LOOP_OPENAI_API_SPEC`, else
the global `OPENAI_API_SPEC`, else `chat_completions`. `chat_completions` (alias `openai-compatible`)
is `@ai-sdk/openai-compatible` (POST /chat/completions, any compatible server); `responses` (alias
`openai`) is `@ai-sdk/openai` (OpenAI's Responses API); a value starting with `@` is taken as the
package name itself. An unknown value falls back to chat_completions with a note.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

ProviderConfigMode = Literal["auto", "legacy_env", "none"]
PROVIDER_CONFIG_MODES: tuple[ProviderConfigMode, ...] = ("auto", "legacy_env", "none")

PROVIDER_ID = "loop"
BASE_URL_ENV = "KILO_LOOP_OPENAI_BASE_URL"
API_KEY_ENV = "KILO_LOOP_OPENAI_API_KEY"
API_SPEC_ENV = "KILO_LOOP_OPENAI_API_SPEC"
_GLOBAL = {BASE_URL_ENV: "OPENAI_BASE_URL", API_KEY_ENV: "OPENAI_API_KEY", API_SPEC_ENV: "OPENAI_API_SPEC"}
DEFAULT_PACKAGE = "@ai-sdk/openai-compatible"
API_SPECS = {"chat_completions": DEFAULT_PACKAGE, "chat": DEFAULT_PACKAGE, "openai-compatible": DEFAULT_PACKAGE,
             "responses": "@ai-sdk/openai", "openai": "@ai-sdk/openai"}


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    api_key: str | None


def endpoint_from(environ: Mapping[str, str]) -> Endpoint | None:
    """The loop's own variables over the global ones; None when no base URL is set."""
    def pick(name: str) -> str | None:
        return environ.get(name) or environ.get(_GLOBAL[name]) or None

    base_url = pick(BASE_URL_ENV)
    return Endpoint(base_url, pick(API_KEY_ENV)) if base_url else None


def api_spec_package(environ: Mapping[str, str]) -> tuple[str, str | None]:
    """The provider package for the API spec set (the loop's variable over the global one), and a note
    when the value is not one the loop knows (then the default is used)."""
    name = API_SPEC_ENV if environ.get(API_SPEC_ENV) else _GLOBAL[API_SPEC_ENV]
    value = (environ.get(name) or "").strip()
    if not value:
        return DEFAULT_PACKAGE, None
    if value.startswith("@") and "/" in value:
        return value, None
    package = API_SPECS.get(value.lower().replace("-", "_")) or API_SPECS.get(value.lower())
    if package is None:
        known = ", ".join(sorted(k for k in API_SPECS if "_" in k or k == "responses"))
        return DEFAULT_PACKAGE, (f"{name}={value!r} is not an API spec the loop knows ({known}, or an "
                                 f"@scope/package name); using chat_completions")
    return package, None


def model_ids(models: Iterable[str | None]) -> list[str]:
    """The model ids under the `loop` provider among `--model` values (`loop/<id>`), in order, once each."""
    prefix = PROVIDER_ID + "/"
    found: list[str] = []
    for model in models:
        if model and model.startswith(prefix) and model[len(prefix):] not in found:
            found.append(model[len(prefix):])
    return found


def provider_block(models: Iterable[str | None], package: str = DEFAULT_PACKAGE) -> dict[str, Any]:
    """The inline-config `provider` entry: `{env:…}` references only, never a value."""
    return {PROVIDER_ID: {
        "npm": package,
        "name": "kilo-loop",
        "options": {"baseURL": "{env:" + BASE_URL_ENV + "}", "apiKey": "{env:" + API_KEY_ENV + "}"},
        "models": {model_id: {"name": model_id, "tool_call": True} for model_id in model_ids(models)},
    }}


@dataclass(frozen=True)
class Injection:
    """What to merge into the inline config, what to set in the child's env, and a note for the operator."""

    config: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    note: str | None = None


def _child_values(endpoint: Endpoint, environ: Mapping[str, str]) -> dict[str, str]:
    """The loop's variable names set in the child when they came from the global ones (else inherited)."""
    values = {BASE_URL_ENV: endpoint.base_url, API_KEY_ENV: endpoint.api_key or ""}
    return {name: value for name, value in values.items() if environ.get(name) != value}


def provider_injection(mode: ProviderConfigMode, runtime: str, environ: Mapping[str, str],
                       models: Iterable[str | None] = ()) -> Injection:
    endpoint = endpoint_from(environ)
    if mode == "none" or endpoint is None:
        return Injection()
    if mode == "legacy_env":
        if runtime != "kilo":
            return Injection(note=f"providerConfigMode legacy_env is for older kilo releases; {runtime} gets no provider")
        env = {"KILO_PROVIDER_TYPE": "openai", "KILO_OPENAI_BASE_URL": endpoint.base_url}
        if endpoint.api_key:
            env["KILO_OPENAI_API_KEY"] = endpoint.api_key
        return Injection(env=env)
    package, spec_note = api_spec_package(environ)
    key_note = None if endpoint.api_key else f"{BASE_URL_ENV} is set without an API key ({API_KEY_ENV} / OPENAI_API_KEY)"
    note = "; ".join(n for n in (spec_note, key_note) if n) or None
    return Injection({"provider": provider_block(models, package)}, _child_values(endpoint, environ), note)


def merge_provider(config: Mapping[str, Any], block: Mapping[str, Any]) -> dict[str, Any]:
    """`config` with `block`'s providers added; a `loop` provider the user defined is kept as theirs."""
    providers = dict(config.get("provider") or {})
    for name, value in block.items():
        providers.setdefault(name, value)
    return {**config, "provider": providers}
