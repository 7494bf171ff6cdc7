"""A fetched body as readable text: an HTML page's main content (trafilatura, which drops
navigation, ads and footers), a PDF's text (pypdf), plain text as it is."""

from __future__ import annotations

import io
import logging

import trafilatura
from pypdf import PdfReader
from pypdf.errors import PdfReadError

from agent.tools.registry import ToolError
from agent.tools.web.fetch import FetchedPage

log = logging.getLogger(__name__)

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
PDF_TYPE = "application/pdf"
TEXT_LIKE_TYPES = frozenset({"application/json", "application/xml", "text/xml"})


def readable_text(page: FetchedPage) -> str:
    """The page as text for the model, headed by its URL (and title when it has one)."""
    kind = page.content_type
    if kind in HTML_TYPES or (kind == "application/octet-stream" and _looks_like_html(page)):
        title, text = html_text(page.body)
    elif kind == PDF_TYPE or page.body.startswith(b"%PDF-"):
        title, text = None, pdf_text(page.body, truncated=page.truncated)
    elif kind.startswith("text/") or kind in TEXT_LIKE_TYPES:
        title, text = None, page.body.decode(page.charset or "utf-8", errors="replace")
    else:
        raise ToolError(f"cannot read content of type {kind!r}")
    head = [f"URL: {page.url}"] + ([f"Title: {title}"] if title else [])
    if page.truncated:
        head.append(f"(cut at {len(page.body):,} bytes: the page is larger)")
    return "\n".join(head) + "\n\n" + (text.strip() or "(no readable text)")


def _looks_like_html(page: FetchedPage) -> bool:
    start = page.body[:512].lstrip().lower()
    return start.startswith((b"<!doctype html", b"<html"))


def html_text(html: bytes) -> tuple[str | None, str]:
    """The title and main text of an HTML document; the whole visible text when no main
    content is found (a page of links, a very short page)."""
    text = trafilatura.extract(html, include_comments=False, include_tables=True, favor_recall=True)
    if not text:
        text = trafilatura.html2txt(html)
    metadata = trafilatura.extract_metadata(html)
    title = metadata.title if metadata is not None else None
    return title, text or ""


def pdf_text(data: bytes, *, truncated: bool = False) -> str:
    """The text of a PDF, page by page; an unreadable PDF is a :class:`ToolError`."""
    try:
        reader = PdfReader(io.BytesIO(data))
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PdfReadError, ValueError, KeyError) as exc:
        log.debug("PDF not readable: %s", exc)
        hint = " (it is larger than the byte cap, so only its start was read)" if truncated else ""
        raise ToolError(f"the PDF could not be read{hint}") from None
    return "\n\n".join(f"[page {n}]\n{text.strip()}" for n, text in enumerate(pages, 1))
