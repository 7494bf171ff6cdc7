"""``hermes chat`` at a terminal shows the answer while the model is still writing it."""

from __future__ import annotations

from sandbox.anthropic_api import AnthropicEmulator
from tests.integration.test_chat_terminal import CTRL_D, PROMPT, _chat

FIRST_WORDS = "The first words"
LAST_WORDS = "the very last words."


async def test_the_answer_is_printed_as_it_streams(tmp_path, emulator: AnthropicEmulator):
    reply = f"{FIRST_WORDS} of a long answer, " + "written slowly, " * 12 + LAST_WORDS
    emulator.reply_fn = lambda body: reply
    emulator.stream_delay = 0.3  # about 30 events: the answer takes seconds to arrive
    terminal = await _chat(tmp_path, emulator)
    try:
        terminal.type("tell me slowly\r")
        await terminal.shows(FIRST_WORDS, after="hermes> ")
        # Shown before the stream ended: the end of the answer and the next prompt are not.
        answer = terminal.screen[terminal.screen.rfind("hermes> ") :]
        assert LAST_WORDS not in answer and PROMPT not in answer
        await terminal.shows(PROMPT, after=LAST_WORDS)
        terminal.type(CTRL_D)
        assert await terminal.exit_code() == 0
    finally:
        terminal.close()
    shown = terminal.screen[terminal.screen.rfind("hermes> ") :]
    assert shown.count(LAST_WORDS) == 1  # printed once, not streamed and then again
