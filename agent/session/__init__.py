"""The agent's one door: :class:`AgentSession`, built once per session from the host's ports.

A host (the gateway, ``hermes chat``, a benchmark) imports this package and nothing deeper of
the agent's turn machinery: ``agent.loop``, ``agent.policy`` and ``agent.compressor`` are private
to the agent (an import contract in ``pyproject.toml`` says so). The few values of theirs a host
builds a session from (its clock, the policy's switches, the summary model's choice) are
re-exported here.
"""

from agent.compressor.summary_model import SummaryModelChoice, choose_summary_model
from agent.compressor.summary_requests import SUMMARY_SDK_RETRIES
from agent.loop import TurnResult
from agent.policy.session_clock import ElapsedTime, SessionClock
from agent.policy.session_policy import PolicySettings
from agent.session.agent_session import AgentSession
from agent.session.ports import (
    PromptWithMemory,
    SessionModel,
    SessionPorts,
    SessionRecorder,
    SessionSettings,
    SessionStatus,
    TurnOutcome,
    TurnSource,
)
from agent.session.resume import STOPPED_NOTE

__all__ = [
    "STOPPED_NOTE",
    "SUMMARY_SDK_RETRIES",
    "AgentSession",
    "ElapsedTime",
    "PolicySettings",
    "PromptWithMemory",
    "SessionClock",
    "SessionModel",
    "SessionPorts",
    "SessionRecorder",
    "SessionSettings",
    "SessionStatus",
    "SummaryModelChoice",
    "TurnOutcome",
    "TurnResult",
    "TurnSource",
    "choose_summary_model",
]
