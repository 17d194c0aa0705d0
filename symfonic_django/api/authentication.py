"""What the API tells a caller it could not authenticate: the credentials it accepts.

DRF answers every unauthenticated request with "Authentication credentials
were not provided.", even one that sent ``Authorization: Bearer ...``, which
reads as if the header never arrived. ``not_authenticated_detail`` says what
was wrong (nothing sent, a scheme this deployment does not take, a header it
cannot read) and names the schemes the project's DRF authenticators accept,
read from the authenticators themselves.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rest_framework.authentication import (
    BaseAuthentication,
    SessionAuthentication,
    TokenAuthentication,
)
from rest_framework.request import Request

__all__ = ["accepted_credentials", "not_authenticated_detail"]

#: An auth-scheme is an RFC 9110 token; anything else is never echoed back.
SCHEME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}")


def accepted_credentials(request: Request, authenticators: Sequence[Any]) -> str:
    """E.g. "`Authorization: Token <key>` or a session login", from ``authenticators``.

    Every authenticator with a ``WWW-Authenticate`` challenge counts by its
    scheme, in the project's order; a session, when ``SessionAuthentication``
    is one of them, comes last (a client that reads this sends a header).
    """
    ways: list[str] = []
    for authenticator in authenticators:
        if isinstance(authenticator, SessionAuthentication) or not isinstance(
                authenticator, BaseAuthentication):
            continue
        challenge = authenticator.authenticate_header(request)
        if challenge:
            secret = "key" if isinstance(authenticator, TokenAuthentication) else "credentials"
            ways.append(f"`Authorization: {challenge.split()[0]} <{secret}>`")
    if any(isinstance(a, SessionAuthentication) for a in authenticators):
        ways.append("a session login")
    ways = list(dict.fromkeys(ways))
    if not ways:
        return "the credentials this deployment accepts"
    return ways[0] if len(ways) == 1 else ", ".join(ways[:-1]) + " or " + ways[-1]


def not_authenticated_detail(request: Request, authenticators: Sequence[Any]) -> str:
    """The 401 sentence for a request no authenticator accepted, naming what would be."""
    use = f"Use {accepted_credentials(request, authenticators)}."
    header = str(request.META.get("HTTP_AUTHORIZATION", "")).strip()
    if not header:
        return f"Authentication credentials were not provided. {use}"
    scheme = header.split()[0]
    if SCHEME.fullmatch(scheme):
        return f"The Authorization scheme '{scheme}' is not accepted here. {use}"
    return f"The Authorization header is malformed. {use}"
