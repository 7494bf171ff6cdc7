"""Replies are split within platform limits without losing text, and Markdown becomes HTML."""

from __future__ import annotations

import pytest

from gateway.markdown_render import markdown_to_telegram_html
from gateway.text_split import split_message, utf16_len


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


def test_too_small_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="at least"):
        split_message("text", 4)


def test_markdown_becomes_telegram_html_with_escaping() -> None:
    html = markdown_to_telegram_html("**bold** *it* `a<b` [x](https://e.com/?a=1&b=2) 1 < 2 & 3")
    assert html == (
        '<b>bold</b> <i>it</i> <code>a&lt;b</code> <a href="https://e.com/?a=1&amp;b=2">x</a>'
        " 1 &lt; 2 &amp; 3"
    )


def test_fenced_code_keeps_its_content_verbatim() -> None:
    html = markdown_to_telegram_html("```py\nif a < b and **c**:\n    pass\n```")
    assert html == ('<pre><code class="language-py">if a &lt; b and **c**:\n    pass</code></pre>')


def test_snake_case_is_not_italic() -> None:
    assert markdown_to_telegram_html("use snake_case_names") == "use snake_case_names"
