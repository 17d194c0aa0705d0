"""JSON as a reviewer reads it (``pretty_json``) and types it (``parse_json``,
``JSONAnswerField``)."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

from .. import jsontext
from ..conf import settings


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)


def parse_json(text: str) -> Any:
    """The JSON value ``text`` spells, or ``ValueError`` saying, after "it is", why not.

    ``jsontext.loads`` with ``SYMFONIC["MAX_JSON_DEPTH"]``: bounded before parsing,
    no NaN, Infinity or numbers too large to store.
    """
    try:
        return jsontext.loads(text, max_depth=settings.MAX_JSON_DEPTH)
    except jsontext.TooDeep:
        raise
    except ValueError as exc:  # JSONDecodeError, a constant or a number refused, a huge integer
        raise ValueError(_("not valid JSON: %(error)s") % {"error": exc}) from exc


class BoundedJSONDecoder(json.JSONDecoder):
    """``parse_json`` as a decoder, for ``forms.JSONField``, which re-reads the typed
    text to show it again: a refusal is the ``JSONDecodeError`` the field catches, and
    the text is then shown as typed."""

    def decode(self, s: str, *args: Any) -> Any:
        try:
            value = parse_json(s)
        except ValueError as exc:
            raise json.JSONDecodeError(str(exc), s, 0) from exc
        if jsontext.unstorable(value):
            # Shown as parsed, a lone surrogate could not even be encoded into the page.
            raise json.JSONDecodeError(_("a value that cannot be stored"), s, 0)
        return value


class JSONAnswerField(forms.JSONField):
    """A JSON value typed by the reviewer, parsed by ``parse_json``; a refusal says why."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(decoder=BoundedJSONDecoder, **kwargs)

    def to_python(self, value: Any) -> Any:
        if self.disabled or not isinstance(value, str) or value in self.empty_values:
            return super().to_python(value)
        try:
            return parse_json(value)
        except ValueError as exc:
            raise ValidationError(_("This value is %(problem)s.") % {"problem": exc},
                                  code="invalid") from exc
