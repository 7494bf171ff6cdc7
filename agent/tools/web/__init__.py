"""The built-in web tools: ``web_fetch`` (a page's readable text) and ``web_search`` (a
configured search provider)."""

from agent.tools.web.settings import SearchSettings, WebToolSettings
from agent.tools.web.tools import WEB_TOOL_NAMES, web_tools

__all__ = ["WEB_TOOL_NAMES", "SearchSettings", "WebToolSettings", "web_tools"]
