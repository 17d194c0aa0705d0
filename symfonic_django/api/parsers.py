"""The API's one parser: JSON, bounded before it is parsed, storable once parsed.

DRF's ``JSONParser`` hands the body to ``json.load``, which recurses once per
nesting level: a body of a thousand ``[`` raised ``RecursionError``, a 500.
Here the body is read up to the size cap and parsed by ``jsontext.loads``
(depth counted first, within ``SYMFONIC["MAX_JSON_DEPTH"]``; no NaN or
Infinity); a body with what no database stores (a NUL, a lone surrogate) is a
400 ``invalid_request`` here, never a database error later.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework.parsers import JSONParser

from .. import jsontext
from ..conf import settings
from ..exceptions import InvalidRequest, PayloadTooLarge

#: Room for the envelope around an answer (``{"token": ..., "answer": ...}``, a comment).
ENVELOPE_BYTES = 8192


def max_body_bytes() -> int:
    """The largest request body the API reads: the answer cap plus its envelope."""
    limit: int = settings.MAX_ANSWER_BYTES + ENVELOPE_BYTES
    return limit


class BoundedJSONParser(JSONParser):
    """``application/json`` bodies, refused before parsing when too large or too deep."""

    def parse(self, stream: Any, media_type: str | None = None,
              parser_context: Mapping[str, Any] | None = None) -> Any:
        limit = max_body_bytes()
        raw: bytes = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise PayloadTooLarge(
                f"The request body is over {limit} bytes; this deployment accepts answers of "
                f"at most {settings.MAX_ANSWER_BYTES} bytes (SYMFONIC['MAX_ANSWER_BYTES']).")
        depth = settings.MAX_JSON_DEPTH
        try:
            # RFC 8259: JSON between systems is UTF-8, whatever charset a client names.
            data = jsontext.loads(raw.decode("utf-8"), max_depth=depth)
        except jsontext.TooDeep:
            raise InvalidRequest(
                f"The request body nests arrays and objects more than {depth} levels deep "
                "(SYMFONIC['MAX_JSON_DEPTH']).") from None
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, an oversized integer
            raise InvalidRequest(f"The request body is not valid JSON: {exc}") from None
        jsontext.refuse_unstorable(data, "The request body", InvalidRequest)
        return data
