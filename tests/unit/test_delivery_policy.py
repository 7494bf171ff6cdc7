"""The retry of one send (waits, retry_after, the time limit) and how a resumed batch is sorted
into steps: pure logic, with an injected clock."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gateway.delivery.deliverer import DeliveryFailed, RetryPolicy, send_with_retry
from gateway.messages.inbound import InboundMessage
from gateway.platforms.base import SendFailure
from gateway.runtime.resume import resume_steps
from gateway.store.records import InboundRecord
from tests.fixtures.fake_time import FakeTime


class Flaky:
    """A send that fails with the given errors, then returns an id."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "sent-id"


class Transient(Exception):
    pass


class Refused(Exception):
    pass


def classify(error: Exception) -> SendFailure:
    if isinstance(error, Refused):
        return SendFailure("refused", transient=False)
    retry_after = float(str(error)) if str(error) else None
    return SendFailure("transient", transient=True, retry_after=retry_after)


POLICY = RetryPolicy(give_up_after=100.0, first_backoff=1.0, max_backoff=8.0)


async def test_transient_failures_are_retried_with_a_doubling_capped_backoff() -> None:
    time = FakeTime()
    send = Flaky(*(Transient() for _ in range(6)))

    sent = await send_with_retry(
        send, classify, POLICY, what="test", clock=time.clock, sleep=time.sleep
    )

    assert sent == "sent-id"
    assert send.calls == 7
    assert time.waits == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]


async def test_a_retry_after_from_the_platform_is_the_wait() -> None:
    time = FakeTime()
    send = Flaky(Transient("7"), Transient())

    await send_with_retry(send, classify, POLICY, what="test", clock=time.clock, sleep=time.sleep)

    assert time.waits == [7.0, 2.0]


async def test_a_permanent_failure_is_not_retried() -> None:
    time = FakeTime()
    send = Flaky(Refused())

    with pytest.raises(DeliveryFailed, match="refused"):
        await send_with_retry(
            send, classify, POLICY, what="test", clock=time.clock, sleep=time.sleep
        )

    assert send.calls == 1 and time.waits == []


async def test_retries_stop_before_a_wait_would_end_past_the_time_limit() -> None:
    time = FakeTime()
    send = Flaky(*(Transient() for _ in range(100)))

    with pytest.raises(DeliveryFailed, match="still failing after 100 s"):
        await send_with_retry(
            send, classify, POLICY, what="test", clock=time.clock, sleep=time.sleep
        )

    assert sum(time.waits) <= POLICY.give_up_after
    assert time.waits[:4] == [1.0, 2.0, 4.0, 8.0]


def message(number: int, text: str = "hi") -> InboundMessage:
    return InboundMessage("telegram", "42", "42", text, f"42:{number}", "telegram:42")


def record(
    number: int,
    status: str = "pending",
    user_message_id: int | None = None,
    reply_id: int | None = None,
) -> InboundRecord:
    now = datetime.now(UTC)
    return InboundRecord(
        id=number,
        platform="telegram",
        platform_message_id=f"42:{number}",
        session_key="telegram:42",
        chat_id="42",
        user_id="42",
        text="hi",
        payload={},
        status=status,
        reply_platform_ids=(),
        received_at=now,
        updated_at=now,
        user_message_id=user_message_id,
        reply_id=reply_id,
    )


def test_a_resumed_batch_is_split_by_how_far_each_turn_got() -> None:
    batch = [message(n) for n in range(1, 7)]
    records = {
        r.platform_message_id: r
        for r in (
            record(1, "processing", user_message_id=10, reply_id=3),
            record(2, "processing", user_message_id=10, reply_id=3),
            record(3, "processing", user_message_id=12),
            record(4, "processing", user_message_id=12),
            record(5),
            record(6, "done", user_message_id=14, reply_id=4),
        )
    }

    steps = resume_steps(batch, records)

    assert [(s.kind, [m.platform_message_id for m in s.messages]) for s in steps] == [
        ("send_reply", ["42:1", "42:2"]),
        ("resume_turn", ["42:3", "42:4"]),
        ("new_turn", ["42:5"]),
    ]
    assert (steps[0].reply_id, steps[1].user_message_id) == (3, 12)


def test_messages_without_records_are_one_new_turn() -> None:
    steps = resume_steps([message(1), message(2)], {})

    assert [(s.kind, len(s.messages)) for s in steps] == [("new_turn", 2)]
