"""The checks of ``hermes doctor`` that ask the services themselves, each without spending
tokens: the model key, endpoint and models (token counting or the models list), the bot tokens
(Telegram ``getMe``, Discord ``/users/@me``) and a write to the database.

Each returns ``(status, line)``; a failure says what failed and why (a rejected key, an
endpoint that cannot be reached), never a secret.
"""

from __future__ import annotations

import asyncio

import aiohttp

from agent.providers.base import Provider
from agent.types import ProviderConnectionError, ProviderError
from gateway.config.schema import Config, MissingSecretError
from gateway.platforms.discord.settings import DiscordSettings
from gateway.platforms.telegram.settings import TelegramSettings

OK, FAIL, WARN = "ok", "FAIL", "warn"
Check = tuple[str, str]
PROBE_TIMEOUT_SECONDS = 15.0
"""How long one service may take to answer a check."""
DISCORD_API = "https://discord.com/api/v10"


async def probe_models(config: Config) -> list[Check]:
    """The main model and the summary model, each asked on its own endpoint."""
    from gateway.sessions.services import main_provider, summary_model_choice, summary_provider

    try:
        main = main_provider(config)
    except MissingSecretError:
        return []  # the secret check has said so already
    checks = [await _probe_model(main, config.model.name, "model")]
    await main.aclose()
    try:
        summary = summary_provider(config)
    except MissingSecretError as exc:
        return [*checks, (FAIL, f"summary model: {exc}")]
    aux = config.auxiliary.compression
    name = summary_model_choice(config).name
    try:
        if name != config.model.name or aux.provider != "auto" or aux.base_url is not None:
            checks.append(await _probe_model(summary, name, "summary model"))
    finally:
        await summary.aclose()
    return checks


async def _probe_model(provider: Provider, model: str, what: str) -> Check:
    try:
        async with asyncio.timeout(PROBE_TIMEOUT_SECONDS):
            await provider.probe(model)
    except ProviderConnectionError as exc:
        return FAIL, f"{what} {model}: cannot reach the endpoint ({exc})"
    except TimeoutError:
        return FAIL, f"{what} {model}: the endpoint did not answer in {PROBE_TIMEOUT_SECONDS:.0f} s"
    except ProviderError as exc:
        return FAIL, f"{what} {model}: {_refusal(exc)}"
    return OK, f"{what} {model}: the key and the endpoint answer ({provider.name})"


def _refusal(exc: ProviderError) -> str:
    if exc.status in (401, 403):
        return f"the key was refused ({exc})"
    if exc.status == 404:
        return f"the endpoint does not know this model ({exc})"
    return str(exc)


async def probe_telegram(settings: TelegramSettings, token: str) -> Check:
    """``getMe`` with the bot token, through python-telegram-bot as the daemon uses it."""
    from telegram import Bot
    from telegram.error import InvalidToken, NetworkError, TelegramError

    bot = Bot(token, base_url=settings.base_url) if settings.base_url else Bot(token)
    try:
        async with asyncio.timeout(PROBE_TIMEOUT_SECONDS):
            me = await bot.get_me()
    except InvalidToken:
        return FAIL, f"telegram: the bot token in {settings.token_env} was rejected"
    except (NetworkError, TimeoutError) as exc:
        return FAIL, f"telegram: cannot reach the Bot API ({type(exc).__name__})"
    except TelegramError as exc:
        return FAIL, f"telegram: getMe failed ({type(exc).__name__})"
    finally:
        await bot.shutdown()
    return OK, f"telegram: the token works (@{me.username})"


async def probe_discord(settings: DiscordSettings, token: str) -> Check:
    """``GET /users/@me`` with the bot token."""
    url = f"{(settings.api_base_url or DISCORD_API).rstrip('/')}/users/@me"
    timeout = aiohttp.ClientTimeout(total=PROBE_TIMEOUT_SECONDS)
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as http,
            http.get(url, headers={"Authorization": f"Bot {token}"}) as response,
        ):
            if response.status == 401:
                return FAIL, f"discord: the bot token in {settings.token_env} was rejected"
            if response.status != 200:
                return FAIL, f"discord: /users/@me answered HTTP {response.status}"
            me = await response.json()
    except (aiohttp.ClientError, TimeoutError) as exc:
        return FAIL, f"discord: cannot reach the API ({type(exc).__name__})"
    return OK, f"discord: the token works ({me.get('username', '?')})"
