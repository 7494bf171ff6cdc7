"""The synthetic transcripts: seeded, shaped like multi-day chats, within Telegram's limits."""

from __future__ import annotations

from itertools import pairwise

from bench.transcripts import MAX_MESSAGE_TOKENS, TranscriptSpec, generate
from sandbox.anthropic_prompt import text_tokens

SPEC = TranscriptSpec(conversations=4, turns=400, turns_per_visit=10.0)


def test_the_same_seed_gives_the_same_set_and_another_seed_another() -> None:
    assert generate(5, SPEC) == generate(5, SPEC)
    assert generate(5, SPEC).timeline != generate(6, SPEC).timeline


def test_visits_are_hours_or_days_apart_and_messages_inside_them_at_human_pace() -> None:
    transcripts = generate(5, SPEC)

    assert transcripts.turns == SPEC.turns
    assert len(transcripts.conversations) == SPEC.conversations
    for conversation in transcripts.conversations:
        assert conversation.turns[0].visit_start
        for before, after in pairwise(conversation.turns):
            gap = after.sent_at - before.sent_at
            if after.visit_start:
                assert SPEC.min_visit_gap_seconds <= gap <= SPEC.max_visit_gap_seconds
            else:
                assert SPEC.min_gap_seconds <= gap <= SPEC.max_gap_seconds
    assert 30 <= transcripts.visits <= 50


def test_lengths_vary_and_every_message_fits_one_telegram_message() -> None:
    transcripts = generate(5, SPEC)
    user = [text_tokens(turn.text) for turn in transcripts.timeline]
    replies = [text_tokens(turn.reply) for turn in transcripts.timeline]

    assert max(user + replies) <= MAX_MESSAGE_TOKENS
    assert len(max(transcripts.timeline, key=lambda t: len(t.reply)).reply) < 4_096
    assert max(user) > 5 * sorted(user)[len(user) // 2]  # a long tail: some long pastes
    assert sorted(replies)[len(replies) // 2] > sorted(user)[len(user) // 2]
    assert abs(text_tokens(transcripts.system_prompt) - SPEC.system_prompt_tokens) < 20


def test_the_timeline_holds_every_turn_in_time_order() -> None:
    transcripts = generate(5, SPEC)
    times = [turn.sent_at for turn in transcripts.timeline]

    assert times == sorted(times)
    assert len(transcripts.timeline) == transcripts.turns
