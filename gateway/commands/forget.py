"""``/forget``: a user asks the bot to delete everything it keeps about them.

The first ``/forget`` says what would go and asks for ``/forget confirm`` within
:data:`CONFIRM_SECONDS`; then the user's own sessions are unloaded, each context engine they
used deletes its records (:meth:`agent.engines.context_engine.ContextEngine.forget`), the store
deletes its rows in one transaction (:mod:`gateway.store.repository_forget`) and blob files no
longer used by anyone are removed. The log says how much, never what.
"""

from __future__ import annotations

import logging
import time

from agent.memory import MemoryOwner
from gateway.commands.registry import CommandContext, CommandSpec
from gateway.media.blobs import BlobStore
from gateway.sessions.engine_factory import build_engine
from gateway.sessions.manager import SessionManager
from gateway.store.repository_forget import ForgetReport

log = logging.getLogger(__name__)

CONFIRM_SECONDS = 300.0
ASK_TEXT = (
    "This deletes everything this bot keeps about you: {sessions} conversation(s) with "
    "{messages} message(s), their attachments, your usage records, the messages you sent "
    "what the bot remembers of you ({memories} memory entries) and your scheduled jobs "
    "({jobs}). Group conversations "
    "and a group's memory, shared with others, stay. It cannot be undone.\n"
    "Send /forget confirm within 5 minutes to go ahead."
)
NOT_ASKED_TEXT = "Send /forget first: it says what would be deleted."
NO_USER_TEXT = "There is no chat user to forget here."
DONE_TEXT = (
    "Done: deleted {sessions} conversation(s), {messages} message(s), {attachments} "
    "attachment(s), {usage} usage record(s), {memories} memory entries and {jobs} scheduled "
    "job(s). Anything you "
    "write now starts afresh."
)


async def forget_user(sessions: SessionManager, platform: str, user_id: str) -> ForgetReport:
    """Delete the user's data (see the module docstring)."""
    services = sessions.services
    repo = services.repo
    owned = await repo.owned_data(platform, user_id)
    for key in owned.session_keys:
        await sessions.unload(key)
    for name in owned.engines:
        try:
            engine = build_engine(services, name)
        except Exception:  # an engine no longer installed keeps nothing we can reach
            log.warning("forget: context engine %s could not be loaded", name)
            continue
        await engine.forget(owned.session_ids, owned.message_ids)
    report = await repo.forget_user(platform, user_id, owned)
    blobs = BlobStore(services.config.media.blob_path())
    for sha256 in report.unreferenced_blobs:
        blobs.path(sha256).unlink(missing_ok=True)
    log.info(
        "forget %s:%s: %d session(s), %d message(s), %d attachment(s), %d usage row(s), "
        "%d inbound record(s), %d quarantined update(s), %d memory entries, %d job(s), "
        "%d blob file(s)",
        platform,
        user_id,
        report.sessions,
        report.messages,
        report.attachments,
        report.usage_rows,
        report.inbound,
        report.quarantined,
        report.memories,
        report.jobs,
        len(report.unreferenced_blobs),
    )
    return report


async def forget_command(ctx: CommandContext) -> str:
    """``/forget``: say what would go; ``/forget confirm``: delete it."""
    address = ctx.address
    key = address.user_key
    if key is None or address.user_id is None:
        return NO_USER_TEXT
    requests = ctx.sessions.forget_requests
    if ctx.argument.strip().lower() != "confirm":
        repo = ctx.sessions.services.repo
        owned = await repo.owned_data(address.platform, address.user_id)
        memories = await repo.list_memories(MemoryOwner("user", address.platform, address.user_id))
        jobs = await repo.pending_jobs(address.platform, address.user_id)
        requests[key] = time.monotonic()
        return ASK_TEXT.format(
            sessions=len(owned.session_ids),
            messages=len(owned.message_ids),
            memories=len(memories),
            jobs=len(jobs),
        )
    asked = requests.pop(key, None)
    if asked is None or time.monotonic() - asked > CONFIRM_SECONDS:
        return NOT_ASKED_TEXT
    report = await forget_user(ctx.sessions, address.platform, address.user_id)
    return DONE_TEXT.format(
        sessions=report.sessions,
        messages=report.messages,
        attachments=report.attachments,
        usage=report.usage_rows,
        memories=report.memories,
        jobs=report.jobs,
    )


FORGET_COMMAND = CommandSpec(
    "forget", "Delete everything the bot keeps about you", forget_command, arguments="[confirm]"
)
