"""Configuration: the schema, loading, validation errors that name the key, and secrets.

Order of sources: ``--config PATH``, else ``$HERMES_HOME/config.yaml``, else the built-in
defaults (which ``config.yaml`` at the project root documents key by key). Secrets never live in
the file: each is named by an ``*_env`` key and read from the environment or a ``.env`` file.
"""

from __future__ import annotations

import difflib
import ipaddress
import os
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

import yaml
from dotenv import load_dotenv
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)

from agent.list_prices import (
    CACHE_READ_MULTIPLIER,
    CACHE_WRITE_1H_MULTIPLIER,
    CACHE_WRITE_5M_MULTIPLIER,
    ListPrice,
)
from gateway.platforms.registry import PLATFORMS
from gateway.settings.home import DEFAULT_HERMES_HOME as DEFAULT_HERMES_HOME
from gateway.settings.home import default_database_url
from gateway.settings.home import hermes_home as hermes_home
from gateway.settings.mcp import McpServerSettings as McpServerSettings
from gateway.settings.mcp import McpSettings as McpSettings
from gateway.settings.media import MediaSettings as MediaSettings
from gateway.settings.media import TranscriptionSettings as TranscriptionSettings
from gateway.settings.secrets import ConfigError as ConfigError
from gateway.settings.secrets import MissingSecretError as MissingSecretError
from gateway.settings.secrets import require_secret as require_secret
from gateway.settings.sections import PlatformSection as PlatformSection  # re-exported
from gateway.settings.sections import Section as _Section
from gateway.settings.tts import TtsSettings as TtsSettings
from gateway.settings.web import WebSettings as WebSettings


def _fraction(value: float) -> float:
    if not 0 < value < 1:
        raise ValueError(f"must be between 0 and 1 (got {value})")
    return value


Fraction = Annotated[float, Field(strict=False)]
PositiveInt = Annotated[int, Field(gt=0)]


PricePerMtok = Annotated[float, Field(ge=0, strict=True, allow_inf_nan=False)]
"""USD per million tokens: a number (not a string or a boolean), zero or more."""
Multiplier = Annotated[float, Field(ge=0, strict=True, allow_inf_nan=False)]


class PriceSettings(_Section):
    """A model's list prices (``model.prices`` and its siblings), for a model the price
    library does not know (a local server, a model newer than the library) or to replace the
    library's. Cache prices are multiples of the input price; the defaults are Anthropic's."""

    input_per_mtok: PricePerMtok
    output_per_mtok: PricePerMtok
    cache_read_multiplier: Multiplier = CACHE_READ_MULTIPLIER
    cache_write_5m_multiplier: Multiplier = CACHE_WRITE_5M_MULTIPLIER
    cache_write_1h_multiplier: Multiplier = CACHE_WRITE_1H_MULTIPLIER

    def list_price(self, key: str) -> ListPrice:
        """These prices as the model table takes them, ``key`` naming where they were set."""
        return ListPrice(**self.model_dump(), source=key)


class ModelChoice(_Section):
    """A model a chat may switch to with ``/model`` (same provider, endpoint and key)."""

    name: str = Field(min_length=1)
    context_length: PositiveInt | None = None
    vision: bool | None = None
    prices: PriceSettings | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, value: Any) -> Any:
        """A bare name is a choice with the model table's facts."""
        return {"name": value} if isinstance(value, str) else value


class ModelSettings(_Section):
    provider: Literal["anthropic", "openrouter", "openai_compat"] = "anthropic"
    name: str = "claude-sonnet-4-5"
    base_url: str | None = None
    api_key_env: str = "ANTHROPIC_API_KEY"
    context_length: PositiveInt | None = None
    vision: bool | None = None
    max_tokens: PositiveInt = 4096
    timeout: Annotated[float, Field(gt=0)] = 120.0
    max_retries: Annotated[int, Field(ge=0, le=10)] = 2
    prices: PriceSettings | None = None
    choices: list[ModelChoice] = Field(default_factory=list)

    @field_validator("choices")
    @classmethod
    def _distinct_choices(cls, value: list[ModelChoice]) -> list[ModelChoice]:
        names = [choice.name for choice in value]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"each model may be listed once (repeated: {', '.join(repeated)})")
        return value


class CompressionSettings(_Section):
    enabled: bool = True
    threshold: Fraction = 0.50
    target_ratio: Fraction = 0.20
    protect_last_n: Annotated[int, Field(ge=1)] = 20
    cold_start: Literal["auto", "off"] = "auto"
    idle: Literal["auto", "off"] = "auto"
    threshold_in_background: Literal["auto", "off"] = "auto"
    prune_tail: Literal["auto", "off"] = "auto"
    """``auto``: a compaction clears old tool outputs in the last ``protect_last_n`` messages
    too, beyond the tail's token budget (the newest results always stay); ``off``: every
    output in the protected tail stays, as the anchor does."""
    notify: bool = True

    _check_threshold = field_validator("threshold", "target_ratio")(_fraction)


class AuxiliaryTask(_Section):
    model: str | None = None
    provider: Literal["auto", "anthropic", "openrouter", "openai_compat"] = "auto"
    base_url: str | None = None
    api_key_env: str | None = None
    context_length: PositiveInt | None = None
    timeout: Annotated[float, Field(gt=0)] = 120.0
    prices: PriceSettings | None = None


class AuxiliarySettings(_Section):
    compression: AuxiliaryTask = Field(default_factory=AuxiliaryTask)


class PromptCachingSettings(_Section):
    cache_ttl: Literal["auto", "5m", "1h"] = "auto"


class CompressorEngineSettings(_Section):
    """Tuning of the built-in compressor's failure handling (``context.compressor``)."""

    retry_delays: list[Annotated[float, Field(ge=0)]] = Field(
        default_factory=lambda: [2.0, 8.0, 20.0]
    )
    cooldown_seconds: Annotated[float, Field(ge=0)] = 600.0


class ContextSettings(BaseModel):
    """``context.engine`` plus one section per engine (``context.<engine>``)."""

    model_config = ConfigDict(extra="allow")
    engine: str = "compressor"
    compressor: CompressorEngineSettings = Field(default_factory=CompressorEngineSettings)

    def engine_section(self, name: str) -> dict[str, Any]:
        """The engine's own settings (``context.<name>``), empty when absent."""
        if name == "compressor":
            return self.compressor.model_dump()
        extra = self.model_extra or {}
        section = extra.get(name) or {}
        return dict(section)


# ``platforms.<name>``: one section per platform, each the settings model registered with the
# platform (gateway/platforms/registry.py), so adding a platform never touches this module.
if TYPE_CHECKING:
    PlatformSettings = _Section
else:
    PlatformSettings = PLATFORMS.settings_model()


class DatabaseSettings(_Section):
    url: str | None = None


DEFAULT_MAX_ITERATIONS = 90
"""Recorded coding-agent tasks take 20 to 50 tool steps, one call a step, and a turn also reads
pages of shortened outputs and repeats a failed call now and then: 90 leaves the longest of them
almost twice its length before the turn stops (Hermes Agent's default too), while a loop that
goes nowhere still ends within minutes (and the daily budgets cap its cost)."""


class AgentSettings(_Section):
    system_prompt: str = (
        "You are Hermes, a helpful assistant reachable from chat apps. Answer concisely."
    )
    max_iterations: Annotated[int, Field(ge=1, le=500)] = DEFAULT_MAX_ITERATIONS
    """Model calls a turn may make before it stops and says so (see DEFAULT_MAX_ITERATIONS)."""
    tools: list[str] = Field(default_factory=lambda: ["current_time", "calculator"])
    max_tool_result_tokens: Annotated[int, Field(ge=500)] | Literal["auto"] = "auto"
    """A larger tool result is kept whole; the context gets its head and tail and a ref the
    model pages through with ``tool_output`` (see :mod:`agent.tools.tool_output`). ``auto``:
    8,000 tokens, at most a tenth of the model's window."""


class LoggingSettings(_Section):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    file: str | None = None
    max_bytes: Annotated[int, Field(ge=1024)] = 10 * 1024 * 1024
    backups: Annotated[int, Field(ge=0)] = 5
    format: Literal["text", "json"] = "text"


class FailoverSettings(_Section):
    """Several gateways on one PostgreSQL database: one leads, the others stand by
    (``docs/failover.md``)."""

    enabled: bool = False
    lease_seconds: Annotated[float, Field(ge=1, le=600)] = 10.0
    """A leader that cannot renew its lease within this time stops acting; a standby takes
    over after it (at once when the leader's database session ended)."""


class GatewaySettings(_Section):
    event_loop: Literal["auto", "uvloop", "asyncio"] = "auto"
    delivery_retry_seconds: Annotated[float, Field(ge=0)] = 600.0
    delivery_backoff_seconds: Annotated[float, Field(gt=0)] = 1.0
    dead_letter_days: Annotated[int, Field(ge=1)] = 30
    loaded_sessions_max_mb: Annotated[float, Field(gt=0)] = 128.0
    """Memory the sessions kept loaded may hold (estimated from their contexts); beyond it the
    least recently used are unloaded (and reloaded from the store when they are written to)."""
    failover: FailoverSettings = Field(default_factory=FailoverSettings)


class LimitsSettings(_Section):
    """Spending limits in USD (None: no limit); a user over one is refused before any call."""

    daily_usd_per_user: Annotated[float, Field(gt=0)] | None = None
    monthly_usd_total: Annotated[float, Field(gt=0)] | None = None
    admins_exempt: bool = True


class MemorySettings(_Section):
    """Long-term memory per user (private chats) and per group chat: the ``memory`` and
    ``recall`` tools, offered whenever enabled (no need to list them in ``agent.tools``)."""

    enabled: bool = True
    max_chars_per_user: Annotated[int, Field(ge=100, le=20_000)] = 2000
    flush_on_compaction: bool = True
    """Whether each compaction's summary request also returns durable facts (same call, every
    engine), merged into the memory of the user or the group without duplicates."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is only reachable from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class DashboardSettings(_Section):
    """The dashboard served by the running daemon (``hermes dashboard`` serves it alone)."""

    enabled: bool = False
    host: str = "127.0.0.1"
    port: Annotated[int, Field(ge=1, le=65535)] = 8787
    token_env: str = "HERMES_DASHBOARD_TOKEN"
    metrics_port: Annotated[int, Field(ge=1, le=65535)] | None = None
    allow_remote: bool = False

    @model_validator(mode="after")
    def _loopback_unless_allowed(self) -> DashboardSettings:
        if not is_loopback(self.host) and not self.allow_remote:
            raise ValueError(
                f"host {self.host} is not a loopback address; the dashboard shows your users' "
                "messages and spend: set dashboard.allow_remote: true to bind there anyway"
            )
        if self.metrics_port is not None and self.metrics_port == self.port:
            raise ValueError("metrics_port must differ from port (null: /metrics on port)")
        return self


class TracingSettings(_Section):
    """OpenTelemetry spans of each turn (needs the ``tracing`` extra)."""

    otlp_endpoint: str | None = None


class JobsSettings(_Section):
    """Scheduled jobs: the ``schedule`` tool (offered whenever enabled, no need to list it in
    ``agent.tools``), ``/jobs`` and ``/tz``, and the scheduler in the daemon."""

    enabled: bool = True
    max_per_user: Annotated[int, Field(ge=1, le=1000)] = 20
    grace_minutes: Annotated[int, Field(ge=0)] = 60
    """A job missed while the daemon was down runs at start if at most this late, else it is
    skipped and its owner told."""


class Config(_Section):
    """The whole validated configuration."""

    model: ModelSettings = Field(default_factory=ModelSettings)
    compression: CompressionSettings = Field(default_factory=CompressionSettings)
    auxiliary: AuxiliarySettings = Field(default_factory=AuxiliarySettings)
    prompt_caching: PromptCachingSettings = Field(default_factory=PromptCachingSettings)
    context: ContextSettings = Field(default_factory=ContextSettings)
    platforms: PlatformSettings = Field(default_factory=PlatformSettings)
    limits: LimitsSettings = Field(default_factory=LimitsSettings)
    database: DatabaseSettings = Field(default_factory=DatabaseSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    logging: LoggingSettings = Field(default_factory=LoggingSettings)
    gateway: GatewaySettings = Field(default_factory=GatewaySettings)
    media: MediaSettings = Field(default_factory=MediaSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    jobs: JobsSettings = Field(default_factory=JobsSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    web: WebSettings = Field(default_factory=WebSettings)
    dashboard: DashboardSettings = Field(default_factory=DashboardSettings)
    tracing: TracingSettings = Field(default_factory=TracingSettings)
    tts: TtsSettings = Field(default_factory=TtsSettings)

    source: str = Field(default="built-in defaults", exclude=True)


def config_model() -> type[Config]:
    """The schema as the platform registry stands now: :class:`Config` itself, or (when a
    platform was registered after this module was imported) a subclass whose ``platforms``
    section has that platform's settings too."""
    platforms = PLATFORMS.settings_model()
    return Config if platforms is PlatformSettings else _config_with_platforms(platforms)


@cache
def _config_with_platforms(platforms: type[BaseModel]) -> type[Config]:
    field = (platforms, Field(default_factory=platforms))
    return create_model("Config", __base__=Config, platforms=field)  # type: ignore[call-overload,no-any-return]


def database_url(config: Config) -> str:
    """The configured ``database.url``, else SQLite under ``$HERMES_HOME``."""
    return config.database.url or default_database_url(hermes_home())


def _model_for_path(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    model: type[BaseModel] | None = config_model()
    for part in loc:
        if isinstance(part, int):  # an index into a list of sections (model.choices.0)
            continue
        if model is None:
            return None
        field = model.model_fields.get(part)
        if field is None:
            return model
        model = _section_type(field.annotation)
    return model


def _section_type(annotation: Any) -> type[BaseModel] | None:
    """The section model an annotation holds: itself, or inside ``X | None`` or ``list[X]``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        if (found := _section_type(arg)) is not None:
            return found
    return None


def _describe_error(err: Any) -> str:
    loc = tuple(err["loc"])
    path = ".".join(str(p) for p in loc)
    kind = err["type"]
    got = err.get("input")
    if kind == "extra_forbidden":
        parent = _model_for_path(loc[:-1])
        names = list(parent.model_fields) if parent else []
        close = difflib.get_close_matches(str(loc[-1]), names, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        return f"{path}: unknown key{hint}"
    if kind == "missing":
        return f"{path}: missing (this key is required)"
    message = err["msg"].removeprefix("Value error, ")
    if kind == "finite_number":
        return f"{path}: must be a finite number (got {got})"
    if kind == "literal_error":
        message = message.replace("Input should be", "must be")
        return f"{path}: {message} (got {got!r})"
    if kind in {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}:
        return f"{path}: {message.replace('Input should be', 'must be')} (got {got})"
    if kind.endswith("_type") or kind.endswith("_parsing"):
        return f"{path}: {message.replace('Input should be', 'must be')} (got {got!r})"
    return f"{path}: {message}"


def parse_config(data: Any, *, source: str = "<memory>") -> Config:
    """Validate a mapping; raise :class:`ConfigError` naming the first bad key."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping of sections")
    try:
        config = config_model().model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ConfigError(_describe_error(first)) from None
    for name, section in (config.context.model_extra or {}).items():
        if not isinstance(section, dict):
            raise ConfigError(f"context.{name}: must be a mapping of engine settings")
    _check_failover(config)
    config.source = source
    return config


def _check_failover(config: Config) -> None:
    """Failover needs a database every host reaches and that holds an election: PostgreSQL."""
    if not config.gateway.failover.enabled:
        return
    url = config.database.url or ""
    if not url.startswith("postgresql"):
        raise ConfigError(
            "gateway.failover.enabled: needs database.url on PostgreSQL "
            "(postgresql://...); SQLite is one host's file"
        )


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """Load, validate and return the configuration; also loads ``.env`` files into the env."""
    load_dotenv(Path.cwd() / ".env", override=False)
    load_dotenv(hermes_home() / ".env", override=False)
    candidate = Path(path) if path else hermes_home() / "config.yaml"
    if path and not candidate.is_file():
        raise ConfigError(f"config file not found: {candidate}")
    if not candidate.is_file():
        return parse_config({}, source="built-in defaults")
    try:
        data = yaml.safe_load(candidate.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{candidate}:{where} is not valid YAML") from None
    return parse_config(data, source=str(candidate))


def mask_url(url: str) -> str:
    """Hide a password embedded in a database URL."""
    if "://" in url and "@" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        user = creds.split(":", 1)[0]
        return f"{scheme}://{user}:***@{host}"
    return url
