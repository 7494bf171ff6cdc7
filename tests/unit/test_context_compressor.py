"""The built-in compressor: when it fires, what it keeps, what it asks the summary model, and how
it survives a summary model that fails. The summary model (the network edge) is a fake."""

from __future__ import annotations

import copy
import itertools
import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from agent.compressor.context_compressor import ContextCompressor
from agent.compressor.factory import create_compressor
from agent.engines.context_engine import EngineContext
from agent.engines.toolkit.boundaries import (
    COMPACTED_RESULT_STUB,
    SUMMARY_PREFIX,
    SYSTEM_COMPACTION_NOTE,
)
from agent.engines.toolkit.summary_prompt import SUMMARY_HEADINGS
from agent.tokens import cache_messages_tokens, count_text_tokens
from agent.types import Message, PromptTooLongError, ProviderError, ProviderTimeoutError, Usage

SYSTEM_TEXT = "You are a careful coding assistant."
TURNS = 20
"""A session of this many review turns is about twice the test threshold."""
SUMMARY_TEXT = "## Goal\n- Review every module.\n## Progress\n### Done\n- Modules reviewed."


@dataclass
class FakeSummaryModel:
    """The auxiliary model: replies from a script (text or exception), then a fixed summary."""

    script: list[str | BaseException] = field(default_factory=list)
    calls: list[tuple[str, str, int | None]] = field(default_factory=list)

    async def __call__(self, task: str, messages: list[Message], max_tokens: int | None) -> str:
        assert len(messages) == 1 and messages[0]["role"] == "user"
        self.calls.append((task, messages[0]["content"], max_tokens))
        if self.script:
            item = self.script.pop(0)
            if isinstance(item, BaseException):
                raise item
            return item
        return SUMMARY_TEXT

    @property
    def prompts(self) -> list[str]:
        return [prompt for _, prompt, _ in self.calls]


@dataclass
class FakeTime:
    now: float = 1_000.0
    sleeps: list[float] = field(default_factory=list)

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)


def prose(seed: int, chars: int) -> str:
    words = itertools.cycle(f"alpha{seed} beta gamma{seed} delta epsilon zeta{seed}".split())
    text = ""
    while len(text) < chars:
        text += next(words) + " "
    return text[:chars]


def history(turns: int, *, output_chars: int = 3_000, reply_chars: int = 800) -> list[Message]:
    """A session of review turns: request, read_file call, its output, a reply."""
    ids = itertools.count(2)
    messages: list[Message] = [{"role": "system", "content": SYSTEM_TEXT, "_id": 1}]
    for t in range(turns):
        call = {
            "id": f"call{t}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/mod{t}.py"})},
        }
        output = f"contents of src/mod{t}.py\n" + prose(t, output_chars)
        messages += [
            {"role": "user", "content": f"Please review src/mod{t}.py", "_id": next(ids)},
            {"role": "assistant", "content": None, "tool_calls": [call], "_id": next(ids)},
            {"role": "tool", "tool_call_id": f"call{t}", "content": output, "_id": next(ids)},
            {
                "role": "assistant",
                "content": f"Reviewed mod{t}. I decided to keep its API. " + prose(t, reply_chars),
                "_id": next(ids),
            },
        ]
    return messages


def compressor(model: FakeSummaryModel | None = None, **overrides: Any) -> ContextCompressor:
    """A compressor for a 20K-token model (threshold 10,000) that protects the last turn."""
    settings: dict[str, Any] = {"protect_last_n": 4, **overrides}
    return ContextCompressor(20_000, call_llm=model or FakeSummaryModel(), **settings)


def summaries(messages: list[Message]) -> list[Message]:
    return [m for m in messages if m.get("_kind") == "summary"]


# -- computed values and when to compress ----------------------------------------------------


def test_a_200k_model_gets_the_documented_budgets() -> None:
    engine = ContextCompressor(200_000, call_llm=FakeSummaryModel())
    assert engine.threshold_tokens == 100_000
    assert engine.tail_token_budget == 20_000
    assert engine.max_summary_tokens == 10_000
    assert engine.name == "compressor"


def test_summary_budget_is_a_fifth_of_the_content_clamped_to_the_limits() -> None:
    engine = ContextCompressor(200_000, call_llm=FakeSummaryModel())
    assert engine.summary_budget(5_000) == 2_000
    assert engine.summary_budget(30_000) == 6_000
    assert engine.summary_budget(500_000) == 10_000
    assert ContextCompressor(1_000_000).max_summary_tokens == 12_000


def test_compression_fires_at_the_threshold_from_the_reported_prompt_size() -> None:
    engine = ContextCompressor(200_000, call_llm=FakeSummaryModel())
    assert not engine.should_compress(99_999)
    assert engine.should_compress(100_000)
    engine.update_from_response(Usage(input_tokens=1_000, cache_read_tokens=99_500))
    assert engine.should_compress()


def test_a_disabled_compressor_never_fires() -> None:
    engine = ContextCompressor(200_000, call_llm=FakeSummaryModel(), enabled=False)
    assert not engine.should_compress(190_000)


# -- phase 1: tool outputs -----------------------------------------------------------------


async def test_old_tool_outputs_become_one_line_descriptions_without_a_model_call() -> None:
    model = FakeSummaryModel()
    engine = compressor(model)
    messages = history(12, output_chars=6_000, reply_chars=40)
    result = await engine.compact(messages, "agent")
    out = result.messages
    assert result is not None
    assert result.outcome == "pruned_only"
    assert model.calls == []
    pruned = next(m for m in out if m.get("tool_call_id") == "call3")
    assert pruned["content"] == (
        f"[Old tool output cleared] read_file, {len(messages[11]['content']):,} chars; "
        'tool_output {"call": "call3"} reads it again'
    )
    assert "_id" not in pruned
    assert out[-2] is messages[-2]  # the newest output is in the protected tail, untouched


async def test_short_tool_outputs_are_kept_and_duplicates_point_to_the_later_copy() -> None:
    engine = compressor()
    messages = history(12, output_chars=6_000, reply_chars=40)
    messages[7] = {**messages[7], "content": "ok"}  # short: kept
    messages[11] = {**messages[11], "content": messages[15]["content"]}  # repeated later
    out = await engine.compress(messages)
    assert out[7] is messages[7]
    assert out[11]["content"] == "[Duplicate of a later read_file output]"


# -- phases 2 to 4: the summary ------------------------------------------------------------


async def test_the_middle_is_replaced_by_one_structured_summary() -> None:
    model = FakeSummaryModel()
    engine = compressor(model)
    messages = history(TURNS)
    result = await engine.compact(messages, "agent")
    out = result.messages
    assert result is not None
    assert result.outcome == "summarized"
    assert len(model.calls) == 1
    task, prompt, budget = model.calls[0]
    assert task == "compression"
    assert "structured summary" in prompt
    for heading in SUMMARY_HEADINGS:
        assert heading in prompt
    assert "[user]: Please review src/mod10.py" in prompt
    assert 'read_file({"path": "src/mod10.py"})' in prompt
    assert "[... middle omitted ...]" in prompt  # tool results are cut to a sane length
    assert budget == engine.max_summary_tokens
    [summary] = summaries(out)
    assert summary["content"] == SUMMARY_PREFIX + SUMMARY_TEXT
    assert "_id" not in summary
    assert all(out[i] is messages[i] for i in (1, 2))  # the first exchange, verbatim
    assert out[3]["content"].startswith("[Old tool output cleared")  # its output is not
    assert out[-1] is messages[-1]
    assert cache_messages_tokens(out) < cache_messages_tokens(messages)


async def test_the_summary_role_alternates_with_its_neighbours() -> None:
    engine = compressor()
    out = await engine.compress(history(TURNS))
    at = next(i for i, m in enumerate(out) if m.get("_kind") == "summary")
    roles = [m["role"] if m["role"] != "tool" else "user" for m in out[at - 1 : at + 2]]
    assert roles[0] != roles[1] != roles[2]


async def test_the_system_prompt_gets_the_compaction_note_at_the_first_compaction_only() -> None:
    engine = compressor()
    first = await engine.compress(history(TURNS))
    assert first[0]["content"] == SYSTEM_TEXT + SYSTEM_COMPACTION_NOTE
    assert "_id" not in first[0]
    second = await engine.compress(first + history(TURNS)[1:])
    assert second[0] is first[0]


async def test_a_later_compaction_asks_to_update_the_previous_summary() -> None:
    model = FakeSummaryModel()
    engine = compressor(model)
    result = await engine.compact(history(TURNS), "agent")
    first = result.messages
    more = history(TURNS)[1:]
    for message in more:
        message.pop("_id")
    result = await engine.compact(first + more, "agent")
    prompt = model.prompts[-1]
    assert "UPDATE" in prompt
    assert f"<previous-summary>\n{SUMMARY_TEXT}\n</previous-summary>" in prompt
    assert "from In Progress to Done" in prompt
    conversation = prompt.split("<conversation>")[1]
    assert SUMMARY_PREFIX.strip() not in conversation  # the old summary is not summarised as a turn
    assert engine.compression_count == 2
    assert len(summaries(result.messages)) == 1


async def test_a_focus_topic_is_put_in_the_prompt_even_when_pruning_would_do() -> None:
    model = FakeSummaryModel()
    engine = compressor(model)
    await engine.compress(history(12, output_chars=6_000, reply_chars=40), focus_topic="mod3")
    assert "give extra detail to: mod3" in model.prompts[0]


async def test_a_middle_too_big_for_the_summary_model_is_summarised_in_chunks() -> None:
    model = FakeSummaryModel(script=["first part", "second part", "third part"])
    engine = compressor(model, summary_context_length=4_000)
    messages = history(TURNS)
    result = await engine.compact(messages, "agent")
    out = result.messages
    assert result is not None
    assert result.outcome == "chunked"
    assert len(model.calls) >= 2
    assert "<previous-summary>\nfirst part\n</previous-summary>" in model.prompts[1]
    assert all(count_text_tokens(p) < 4_000 for p in model.prompts)
    summarised = "".join(model.prompts)
    for t in range(1, TURNS - 2):
        assert f"Please review src/mod{t}.py" in summarised
    assert summaries(out)[0]["content"].startswith(SUMMARY_PREFIX)


async def test_prompt_too_long_from_the_summary_model_means_smaller_chunks() -> None:
    model = FakeSummaryModel(script=[PromptTooLongError("too long", status=400)])
    engine = compressor(model)
    result = await engine.compact(history(TURNS), "agent")
    assert result is not None
    assert result.outcome in ("summarized", "chunked")
    assert len(model.prompts[1]) < len(model.prompts[0])
    assert not result.degraded


# -- failures: retry, fallback, cooldown ---------------------------------------------------


async def test_transient_errors_and_timeouts_are_retried_with_backoff() -> None:
    time = FakeTime()
    overloaded = ProviderError("overloaded", status=529, retryable=True)
    timeout = TimeoutError()  # what asyncio.wait_for raises (asyncio.TimeoutError is this class)
    model = FakeSummaryModel(script=[overloaded, timeout])
    engine = compressor(model, clock=time.clock, sleep=time.sleep)
    result = await engine.compact(history(TURNS), "agent")
    assert time.sleeps == [2.0, 8.0]
    assert result is not None
    assert result.outcome == "summarized"


async def test_a_summary_model_that_stays_down_yields_an_extractive_summary_and_a_notice() -> None:
    time = FakeTime()
    model = FakeSummaryModel(script=[ProviderTimeoutError("slow")] * 4)
    engine = compressor(model, clock=time.clock, sleep=time.sleep)
    messages = history(TURNS)
    result = await engine.compact(messages, "agent")
    out = result.messages
    assert result is not None
    assert time.sleeps == [2.0, 8.0, 20.0]
    assert result.outcome == "fallback" and result.degraded
    assert result.user_notice is not None and "kept" in result.user_notice
    [summary] = summaries(out)
    assert "Please review src/mod10.py" in summary["content"]  # user requests
    assert "I decided to keep its API" in summary["content"]  # decisions
    assert "src/mod15.py" in summary["content"]  # file paths
    assert cache_messages_tokens(out) < cache_messages_tokens(messages)


async def test_a_non_retryable_error_falls_back_at_once() -> None:
    time = FakeTime()
    model = FakeSummaryModel(script=[ProviderError("bad key", status=401)])
    engine = compressor(model, clock=time.clock, sleep=time.sleep)
    result = await engine.compact(history(TURNS), "agent")
    assert time.sleeps == [] and len(model.calls) == 1
    assert result is not None and result.outcome == "fallback"


async def test_an_empty_summary_is_a_failure_not_a_summary() -> None:
    engine = compressor(FakeSummaryModel(script=["   "]))
    result = await engine.compact(history(TURNS), "agent")
    assert result is not None and result.outcome == "fallback"


async def test_after_a_failure_the_cooldown_skips_the_model_even_after_a_restart() -> None:
    time = FakeTime()
    model = FakeSummaryModel(script=[ProviderError("down", status=500)])
    engine = compressor(model, clock=time.clock, sleep=time.sleep, cooldown_seconds=600)
    result = await engine.compact(history(TURNS), "agent")
    restarted_model = FakeSummaryModel()
    restarted = compressor(restarted_model, clock=time.clock, sleep=time.sleep)
    restarted.restore_state(json.loads(json.dumps(engine.get_state().to_json())))
    time.now += 300
    result = await restarted.compact(history(TURNS), "agent")
    assert restarted_model.calls == []
    assert result is not None
    assert result.outcome == "fallback"
    assert restarted.get_status()["cooldown_remaining_seconds"] == 300
    time.now += 301
    result = await restarted.compact(history(TURNS), "agent")
    assert len(restarted_model.calls) == 1
    assert result.outcome == "summarized"


async def test_without_a_summary_model_the_compaction_still_happens_degraded() -> None:
    engine = ContextCompressor(20_000, protect_last_n=4)
    messages = history(TURNS)
    result = await engine.compact(messages, "agent")
    out = result.messages
    assert result is not None and result.degraded
    assert "Please review src/mod10.py" in summaries(out)[0]["content"]
    assert cache_messages_tokens(out) < cache_messages_tokens(messages)


async def test_a_restarted_compressor_carries_on_from_its_saved_state() -> None:
    model = FakeSummaryModel()
    engine = compressor(model)
    first = await engine.compress(history(TURNS))
    restarted = compressor(model)
    restarted.restore_state(json.loads(json.dumps(engine.get_state().to_json())))
    more = [{k: v for k, v in m.items() if k != "_id"} for m in history(TURNS)[1:]]
    second = await restarted.compress(first + more)
    assert second[0] is first[0]  # no second note on the system prompt
    assert restarted.compression_count == 2
    assert f"<previous-summary>\n{SUMMARY_TEXT}\n</previous-summary>" in model.prompts[-1]


# -- never bigger, never a loop, nothing lost ----------------------------------------------


async def test_a_compaction_that_would_not_shrink_the_prompt_returns_it_unchanged() -> None:
    engine = compressor(FakeSummaryModel(script=[prose(1, 20_000)]), threshold=0.01)
    messages = history(3, output_chars=10, reply_chars=10)
    engine.restore_prompt_size(500)
    result = await engine.compact(messages, "agent")
    out = result.messages
    assert out == messages and all(a is b for a, b in zip(out, messages, strict=True))
    assert result is not None and result.outcome == "skipped"
    assert engine.compression_count == 0
    # It does not fire again until the context grows past where it was.
    assert not engine.should_compress(500)
    assert engine.should_compress(501)


async def test_after_a_compaction_the_estimate_of_the_new_context_is_the_prompt_size() -> None:
    engine = compressor()
    engine.update_from_response(Usage(input_tokens=30_000))
    out = await engine.compress(history(TURNS))
    assert engine.last_prompt_tokens == cache_messages_tokens(out)
    assert not engine.should_compress()


async def test_input_messages_are_never_modified() -> None:
    messages = history(TURNS)
    before = copy.deepcopy(messages)
    await compressor().compress(messages)
    for original, now in zip(before, messages, strict=True):
        now.pop("_tokens", None)  # the token count cache is the one key allowed to appear
        assert now == original


async def test_orphaned_results_are_dropped_and_unanswered_calls_get_a_stub() -> None:
    messages = history(TURNS)
    call = {"id": "lost", "type": "function", "function": {"name": "shell", "arguments": "{}"}}
    messages[-1] = {"role": "assistant", "content": None, "tool_calls": [call], "_id": 900}
    messages.append({"role": "user", "content": "and now?", "_id": 901})
    messages.insert(-3, {"role": "tool", "tool_call_id": "nobody", "content": "x", "_id": 902})
    out = await compressor().compress(messages)
    assert all(m.get("tool_call_id") != "nobody" for m in out)
    stub_at = next(i for i, m in enumerate(out) if m.get("_id") == 900) + 1
    assert out[stub_at] == {
        "role": "tool",
        "tool_call_id": "lost",
        "content": COMPACTED_RESULT_STUB,
        "_tokens": out[stub_at]["_tokens"],
    }


async def test_a_request_followed_by_a_long_tool_loop_stays_verbatim() -> None:
    messages = history(10)
    ids = itertools.count(500)
    messages.append({"role": "user", "content": "Now fix every module.", "_id": next(ids)})
    for t in range(40):
        call = {
            "id": f"fix{t}",
            "type": "function",
            "function": {"name": "edit", "arguments": "{}"},
        }
        messages.append(
            {"role": "assistant", "content": None, "tool_calls": [call], "_id": next(ids)}
        )
        messages.append(
            {
                "role": "tool",
                "tool_call_id": f"fix{t}",
                "content": prose(t, 2_000),
                "_id": next(ids),
            }
        )
    request = messages[41]
    out = await compressor().compress(messages)
    assert request in out and any(m is request for m in out)
    assert out.index(request) > next(i for i, m in enumerate(out) if m.get("_kind") == "summary")
    assert cache_messages_tokens(out) < compressor().threshold_tokens


async def test_compact_reports_the_outcome_range_and_state() -> None:
    engine = compressor()
    messages = history(TURNS)
    result = await engine.compact(messages, trigger="manual")
    assert result.trigger == "manual"
    assert result.outcome == "summarized"
    kept = {m["_id"] for m in result.messages if "_id" in m}
    gone = [m["_id"] for m in messages[1:] if m["_id"] not in kept]
    assert (result.first_compacted_id, result.last_compacted_id) == (gone[0], gone[-1])
    assert result.tokens_before == cache_messages_tokens(messages)
    assert result.tokens_after == cache_messages_tokens(result.messages) < result.tokens_before
    assert result.summary == SUMMARY_TEXT
    assert result.engine_state == engine.get_state()
    assert result.engine_state is not None
    assert result.engine_state.to_json()["previous_summary"] == SUMMARY_TEXT
    status = engine.get_status()
    assert status["compression_count"] == 1 and status["last_outcome"] == "summarized"
    assert status["threshold_tokens"] == 10_000


def test_the_factory_builds_the_compressor_from_the_engine_context() -> None:
    model = FakeSummaryModel()
    ctx = EngineContext(
        context_length=32_000, call_llm=model, threshold=0.6, protect_last_n=8,
        summary_context_length=16_000, enabled=False,
    )  # fmt: skip
    engine = create_compressor(ctx)
    assert engine.threshold_tokens == 19_200
    assert engine.protect_last_n == 8
    assert engine.summary_context_length == 16_000
    assert not engine.enabled


@pytest.mark.parametrize("budget", [200, 2_000])
def test_the_extractive_summary_stays_within_its_budget(budget: int) -> None:
    from agent.compressor.extractive_summary import extractive_summary

    text = extractive_summary(history(200)[1:], budget_tokens=budget)
    assert count_text_tokens(text) <= budget
    assert "src/mod199.py" in text  # the newest items are kept first
