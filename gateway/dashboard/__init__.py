"""``hermes dashboard``: the operators' pages and ``/metrics`` over the store.

Server-rendered (Starlette, Jinja2 templates in ``templates/``, charts as inline SVG), on
loopback by default, behind a token. Every number is read through the queries behind
``hermes usage`` and ``/usage``; the only change it makes is an access decision.
"""
