"""Replies are split within platform limits without losing text; Markdown renders for Telegram."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.text.markdown import markdown_to_telegram
from gateway.text.split import split_message, utf16_len
from sandbox.telegram_markdown import parse_markdown_v2


def test_short_text_is_one_part() -> None:
    assert split_message("hello", 100) == ["hello"]


def test_split_prefers_paragraph_boundaries() -> None:
    text = "a" * 60 + "\n\n" + "b" * 60
    assert split_message(text, 100) == ["a" * 60, "b" * 60]


def test_split_counts_utf16_units_for_telegram() -> None:
    text = "😀" * 100  # 200 UTF-16 units
    parts = split_message(text, 64, length=utf16_len)
    assert all(utf16_len(part) <= 64 for part in parts)
    assert "".join(parts) == text


def test_code_block_cut_in_two_is_closed_and_reopened() -> None:
    code = "\n".join(f"line {i}" for i in range(40))
    parts = split_message(f"Intro\n```python\n{code}\n```", 120)
    assert len(parts) > 1
    assert all(len(part) <= 120 for part in parts)
    for part in parts[1:]:
        assert part.startswith("```python\n")
    for part in parts:
        assert part.count("```") % 2 == 0
    body = [line for p in parts for line in p.split("\n") if line.startswith("line ")]
    assert body == code.split("\n")


def test_parts_fit_the_limit_once_rendered_and_still_end_at_paragraphs() -> None:
    # MarkdownV2 escapes every ">", ".", "!", "(" and "-": this text grows an eighth when sent.
    paragraphs = [f"Step {n}: if a > b (and c-d), stop! Then go on." for n in range(60)]
    text = "\n\n".join(paragraphs)
    assert utf16_len(markdown_to_telegram(text[:1000])) > 1100
    parts = split_message(text, 1000, length=utf16_len, render=markdown_to_telegram)
    assert len(parts) >= 3
    assert all(utf16_len(markdown_to_telegram(part)) <= 1000 for part in parts)
    assert all(utf16_len(markdown_to_telegram(part)) > 800 for part in parts[:-1])  # kept full
    assert "\n\n".join(parts) == text


def test_code_block_cut_for_its_rendering_is_closed_and_reopened() -> None:
    # Inside code MarkdownV2 escapes only "\\" and "`": a Windows path doubles when sent.
    code = "\n".join(f"copy C:\\dir\\file{i}.txt D:\\backup\\" for i in range(40))
    parts = split_message(
        f"Intro\n```bat\n{code}\n```", 400, length=utf16_len, render=markdown_to_telegram
    )
    assert all(utf16_len(markdown_to_telegram(part)) <= 400 for part in parts)
    for part in parts[1:]:
        assert part.startswith("```bat\n")
    body = [line for p in parts for line in p.split("\n") if line.startswith("copy ")]
    assert body == code.split("\n")


def test_too_small_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="at least"):
        split_message("text", 4)


def test_markdown_renders_to_entities_telegram_accepts() -> None:
    rendered = markdown_to_telegram("**bold** *it* `a<b` [x](https://e.com/?a=1&b=2) 1 < 2 & 3.")
    text, entities = parse_markdown_v2(rendered)
    assert text == "bold it a<b x 1 < 2 & 3."
    kinds = {entity["type"] for entity in entities}
    assert {"bold", "italic", "code", "text_link"} <= kinds


def test_fenced_code_keeps_its_content_verbatim() -> None:
    rendered = markdown_to_telegram("```py\nif a < b and **c**:\n    pass\n```")
    text, entities = parse_markdown_v2(rendered)
    assert "if a < b and **c**:\n    pass" in text
    assert entities[0]["type"] == "pre"


MARKDOWN_HEAVY = st.one_of(
    st.sampled_from(list("*_`[]()~>#+-=|{}.!\\<&\n ")),
    st.sampled_from(["**", "```", "- ", "1. ", "# ", "> ", "http://e.com/a_b"]),
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")),
)


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=300)
)
def test_any_model_text_renders_to_markdown_telegram_can_parse(source: str) -> None:
    # Whatever the model writes, the rendering is valid MarkdownV2 (no "can't parse entities"),
    # so the plain-text fallback is the exception, not the rule.
    parse_markdown_v2(markdown_to_telegram(source))


@settings(max_examples=100, deadline=None)
@given(st.lists(MARKDOWN_HEAVY.filter(lambda piece: "`" not in piece), max_size=400).map("".join))
def test_any_model_text_splits_into_parts_that_fit_once_rendered(source: str) -> None:
    parts = split_message(source, 120, length=utf16_len, render=markdown_to_telegram)
    assert all(utf16_len(markdown_to_telegram(part)) <= 120 for part in parts)
    assert all(utf16_len(part) <= 120 for part in parts)  # and as the plain-text fallback
    assert "".join("".join(parts).split()) == "".join(source.split())  # nothing lost or moved
