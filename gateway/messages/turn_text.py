"""The text and time of one turn merged from several inbound messages.

Messages that arrive while a turn is held open (a paste a client split into pieces, quick
follow-ups) are answered as one turn: their texts joined, their newest platform time its time.
"""

from __future__ import annotations

import itertools

from gateway.messages.inbound import InboundMessage

MESSAGE_SEPARATOR = "\n\n"
"""Between messages merged into one turn."""
PIECE_SEPARATOR = " "
"""Between pieces of one pasted text: the client cut at whitespace, which Telegram trims."""


def merge_texts(batch: list[InboundMessage]) -> str:
    """One turn's text: pieces of a client-split paste rejoin, messages with a blank line.

    Messages without text (a photo without caption) add nothing.
    """
    batch = [message for message in batch if message.text] or batch[:1]
    text = batch[0].text
    for previous, message in itertools.pairwise(batch):
        if not previous.may_continue:
            text += MESSAGE_SEPARATOR + message.text
        elif text[-1:].isspace() or message.text[:1].isspace():
            text += message.text
        else:
            text += PIECE_SEPARATOR + message.text
    return text


def batch_sent_at(batch: list[InboundMessage]) -> float | None:
    """The platform time of a merged turn: its newest message's (None when none has one)."""
    times = [message.sent_at for message in batch if message.sent_at is not None]
    return max(times) if times else None
