"""One request to the summary model, retried with backoff while its errors are transient.

Kept apart from the compressor so its policy (which errors are worth a retry, how a failure is
described to the user and in the compaction record) reads on its own.

This is the only retry layer of a summary call: the provider it goes through is built with
:data:`SUMMARY_SDK_RETRIES` (none), so one summary request makes at most
``1 + len(retry_delays)`` HTTP attempts (4 with the default delays of 2, 8 and 20 s), each
bounded by ``auxiliary.compression.timeout`` (120 s): at most 4 x 120 + 30 = 510 s before the
compressor falls back to its extractive summary.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from functools import partial

from tenacity import RetryCallState, retry_if_exception, stop_after_attempt

from agent.engines.context_engine import CallLLM
from agent.retries import fixed_delays, last_failure, retried
from agent.types import ProviderError, ProviderTimeoutError

log = logging.getLogger(__name__)

COMPACTION_TASK = "compression"
"""The auxiliary task name that routes summary calls (``auxiliary.compression``)."""
SUMMARY_SDK_RETRIES = 0
"""The SDK's own retries of a summary call: none, :func:`request_summary` retries (with the
SDK's two on top, one summary could take 12 HTTP attempts before the fallback)."""


class SummaryUnavailableError(Exception):
    """The summary model could not produce a summary; ``str()`` says why."""


def is_retryable(exc: BaseException) -> bool:
    """Timeouts and provider errors marked retryable (429, 5xx, 529) are worth another try."""
    if isinstance(exc, TimeoutError | ProviderTimeoutError):
        return True
    return isinstance(exc, ProviderError) and exc.retryable


def describe_failure(exc: BaseException) -> str:
    """A short reason for logs, the compaction record and the user's notice."""
    status = getattr(exc, "status", None)
    kind = "timeout" if isinstance(exc, TimeoutError | ProviderTimeoutError) else type(exc).__name__
    return f"{kind}{f' {status}' if status else ''}: {exc}".rstrip(": ")


async def request_summary(
    call_llm: CallLLM,
    prompt: str,
    budget: int,
    retry_delays: Sequence[float],
    sleep: Callable[[float], Awaitable[object]],
) -> str:
    """One summary request, retried after each delay while the error is transient
    (``1 + len(retry_delays)`` attempts at most; see the module docstring).

    Raises :class:`PromptTooLongError` at once (the caller chunks smaller), the last provider
    error when retries run out, and :class:`SummaryUnavailableError` for an empty answer.
    """

    def note_retry(retry_state: RetryCallState) -> None:
        failure = describe_failure(last_failure(retry_state))
        log.info(
            "summary request failed (%s); retrying in %.0f s", failure, retry_state.upcoming_sleep
        )

    text = await retried(
        partial(call_llm, COMPACTION_TASK, [{"role": "user", "content": prompt}], budget),
        stop=stop_after_attempt(1 + len(retry_delays)),
        wait=fixed_delays(retry_delays),
        retry=retry_if_exception(is_retryable),
        sleep=sleep,
        before_sleep=note_retry,
    )
    if not text or not text.strip():
        raise SummaryUnavailableError("the summary model returned an empty summary")
    return text.strip()
