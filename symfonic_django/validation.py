"""What a valid ``SYMFONIC`` value is: the checks the declarations of ``conf.py`` name.

Each ``Check`` takes a value and its setting's default and returns None, or a
``Problem``: the rest of the system check's message after ``SYMFONIC[...]['KEY']``,
and its hint. A ``Relation`` checks one key against the others of its dict.
``checks/settings.py`` turns problems into Errors with their ids; this module only says
what is wrong, in words a deployer can act on.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings as django_settings

#: What is wrong with a value: the rest of the message after ``SYMFONIC[...]['KEY']``,
#: and a hint.
Problem = tuple[str, str]
#: ``(value, default) -> Problem | None``.
Check = Callable[[Any, Any], Problem | None]
#: ``(every value of the dict, defaults filled in) -> Problem | None``: a rule between keys.
Relation = Callable[[Mapping[str, Any]], Problem | None]



def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_http_url(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def is_webhook_secret(value: Any) -> bool:
    """A Standard Webhooks secret: ``whsec_`` and base64 of 24 to 64 bytes."""
    if not isinstance(value, str) or not value.startswith("whsec_"):
        return False
    try:
        key = base64.b64decode(value.removeprefix("whsec_"), validate=True)
    except (binascii.Error, ValueError):
        return False
    return 24 <= len(key) <= 64


def a_callable(value: Any, default: Any) -> Problem | None:
    if isinstance(value, str) or callable(value):
        return None
    return f" must be a dotted path or a callable, not {value!r}.", f"The default is {default!r}."


def a_callable_or_none(value: Any, default: Any) -> Problem | None:
    return None if value is None else a_callable(value, default)


def agents(value: Any, default: Any) -> Problem | None:
    if isinstance(value, dict) and all(isinstance(p, str) or callable(p)
                                       for p in value.values()):
        return None
    return (" must map agent names to dotted paths.",
            "For example {'refund': 'myapp.agents.refund_agent'}.")


def with_default_hint(valid: Callable[[Any], bool], must: str) -> Check:
    """A check of ``valid``: else "must be <must>, not <value>", the default as the hint."""
    def check(value: Any, default: Any) -> Problem | None:
        return None if valid(value) else (f" must be {must}, not {value!r}.",
                                          f"The default is {default}.")
    return check


positive = with_default_hint(lambda v: is_whole(v) and v > 0, "a positive integer")
seconds_above_0 = with_default_hint(lambda v: is_number(v) and v > 0,
                                    "a number of seconds above 0")


def at_least(least: int) -> Check:
    return with_default_hint(lambda v: is_whole(v) and v >= least,
                             f"a whole number of at least {least}")


def flag(hint: str) -> Check:
    def check(value: Any, default: Any) -> Problem | None:
        return None if isinstance(value, bool) else (f" must be True or False, not {value!r}.",
                                                     hint)
    return check


def event_retention(value: Any, default: Any) -> Problem | None:
    if value is None or (is_whole(value) and value > 0):
        return None
    return (f" must be None (keep events for ever) or a positive integer of seconds, not "
            f"{value!r}.", "The default, None, keeps the events of finished runs for ever.")


def scope_cache_seconds(value: Any, default: Any) -> Problem | None:
    if is_number(value) and value >= 0:
        return None
    return (f" must be a number of seconds, 0 or more, not {value!r}.",
            "0 (the default) loads the scope for every turn.")


ON_EXPIRE_CHOICES = ("fail", "resume")


def on_expire(value: Any, default: Any) -> Problem | None:
    if value in ON_EXPIRE_CHOICES:
        return None
    return (f" must be 'fail' or 'resume', not {value!r}.",
            "'fail' (the default) fails the paused run; 'resume' resumes it with a recorded "
            "timeout answer.")


#: The deepest nesting a request may be allowed. Parsing is not the limit (the
#: parser sees only bounded bodies), what follows is: jsonschema follows a nested answer
#: through several frames per level and exhausts Python's recursion limit near 256.
MAX_JSON_DEPTH_CEILING = 100


def json_depth(value: Any, default: Any) -> Problem | None:
    if not is_whole(value) or value <= MAX_JSON_DEPTH_CEILING:
        return at_least(2)(value, default)
    return (f" = {value} lets a request nest deeper than schema validation can follow without "
            "exhausting Python's recursion limit.",
            f"Keep it at most {MAX_JSON_DEPTH_CEILING}; the default is {default}.")


def cache_alias(value: Any, default: Any) -> Problem | None:
    caches = getattr(django_settings, "CACHES", {}) or {}
    if isinstance(value, str) and value in caches:
        return None
    return (f" = {value!r} is not an alias in CACHES.",
            f"Name one of {sorted(caches)}; the default is {default!r}.")


def a_dict(example: str) -> Check:
    def check(value: Any, default: Any) -> Problem | None:
        return None if isinstance(value, dict) else (" must be a dict.", example)
    return check


def site_url(value: Any, default: Any) -> Problem | None:
    if value == "" or (is_http_url(value) and not urlsplit(value).query
                       and not urlsplit(value).fragment):
        return None
    return (f" must be an http(s) origin, not {value!r}.",
            "For example 'https://review.example.com': links to review pages start with it.")


def reviewer_emails(value: Any, default: Any) -> Problem | None:
    if value is None or isinstance(value, str) or callable(value):
        return None
    return (f" must be None, a dotted path or a callable, not {value!r}.",
            "A callable scope_key -> iterable of email addresses.")


def from_email(value: Any, default: Any) -> Problem | None:
    if value is None or (isinstance(value, str) and value.strip()):
        return None
    return f" must be None or an address, not {value!r}.", "None sends from DEFAULT_FROM_EMAIL."


def before_expiry(value: Any, default: Any) -> Problem | None:
    if value is None or (is_number(value) and value > 0):
        return None
    return (f" must be None or a number of seconds above 0, not {value!r}.",
            f"Seconds before a pause expires; the default is {default}, None turns it off.")


#: The longest name ``django.contrib.auth``'s ``Group`` takes.
GROUP_NAME_CHARS = 150


def group_name(value: Any, default: Any) -> Problem | None:
    if value is None or (isinstance(value, str) and value.strip()
                         and len(value) <= GROUP_NAME_CHARS):
        return None
    return (f" must be None or the name of a Django auth group, not {value!r}.",
            "Its active members with an email address are sent escalations; None sends none "
            "by email.")


def longest_backoff_not_below_first(given: Mapping[str, Any]) -> Problem | None:
    first, longest = given["RETRY_BACKOFF"], given["RETRY_BACKOFF_MAX"]
    if is_number(first) and is_number(longest) and longest < first:
        return (" is below RETRY_BACKOFF.",
                "The longest wait between attempts is at least the first.")
    return None


def escalation_after_reminder(given: Mapping[str, Any]) -> Problem | None:
    remind, escalate = given["REMIND_BEFORE"], given["ESCALATE_BEFORE"]
    if (is_number(remind) and is_number(escalate) and remind > 0 and escalate > 0
            and escalate >= remind):
        return (f" ({escalate}) is not less than REMIND_BEFORE ({remind}): the escalation "
                "would go out before, or with, the reminder.",
                "Escalate closer to the expiry than the reminder, e.g. REMIND_BEFORE 3600 and "
                "ESCALATE_BEFORE 900.")
    return None


