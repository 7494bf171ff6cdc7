"""``hermes chat`` at a terminal prints the answer while the model writes it.

A :class:`TerminalPrinter` observes one turn (:mod:`agent.reply_stream`): text is written as
it streams, a tool round shows a progress line. Whether the streamed text was the whole
answer is known only at the end (text written before a tool call is not part of the reply),
so :meth:`TerminalPrinter.finish` says whether the reply still has to be printed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from gateway.delivery.live_reply import PROGRESS_LINE


class TerminalPrinter:
    """Writes one turn's streamed answer to a terminal (an ``agent.reply_stream`` observer)."""

    def __init__(self, out: TextIO, prefix: str) -> None:
        self.out = out
        self.prefix = prefix
        self._call_text = ""
        self._line_open = False

    def model_call_started(self) -> None:
        self._call_text = ""
        self._end_line()

    def text_delta(self, text: str) -> None:
        if not self._line_open:
            self.out.write(self.prefix)
            self._line_open = True
        self._call_text += text
        self.out.write(text)
        self.out.flush()

    def tools_started(self, names: Sequence[str]) -> None:
        self._end_line()
        print(PROGRESS_LINE.format(tools=", ".join(names) or "a tool"), file=self.out, flush=True)

    def _end_line(self) -> None:
        if self._line_open:
            print(file=self.out, flush=True)
            self._line_open = False

    def finish(self, reply_text: str) -> bool:
        """End the streamed output; True when it was the whole reply (nothing more to print)."""
        complete = self._line_open and self._call_text == reply_text
        self._end_line()
        return complete
