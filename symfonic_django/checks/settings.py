"""The checks of the ``SYMFONIC`` dict itself, one declaration of ``conf`` at a time.

``check_settings`` reports on every key but the API's limits (``check_api_limits``)
and ``NOTIFY`` (``check_notifications``): each value against its declaration's
check, each dotted path by importing it. The ids are listed in ``checks/__init__``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.conf import settings as django_settings
from django.core.checks import Error, Tags, register
from django.utils.module_loading import import_string

from ..conf import (
    IMPORT_STRINGS,
    NOTIFY_SETTINGS,
    REMOVED_SETTINGS,
    SETTING_NAME,
    SETTINGS,
    WEBHOOK_KEYS,
    Setting,
    with_defaults,
)
from ..notifications import EVENT_TYPES
from ..validation import is_http_url, is_webhook_secret

#: The settings ``check_api_limits`` reports on; ``NOTIFY`` has ``check_notifications``.
API_LIMITS = ("MAX_JSON_DEPTH", "TOKEN_FAILURE_LIMIT", "TOKEN_FAILURE_WINDOW", "THROTTLE_CACHE")
#: The extension points (one dotted path each), checked in this order, then AGENTS.
HOOKS = sorted(IMPORT_STRINGS)
#: The plain values ``check_settings`` reports on, in their declared order.
PLAIN = [name for name, s in SETTINGS.items()
         if not s.imports and s.keys is None and name not in API_LIMITS]
CALLABLE_HINT = "Give the dotted path of a callable."


def _user_settings() -> Any:
    return getattr(django_settings, SETTING_NAME, {})


def _value_errors(where: str, declared: Mapping[str, Setting], given: Mapping[str, Any],
                  names: Iterable[str], id: str) -> list[Error]:
    """The problems of each of ``names``, as ``id`` errors on ``SYMFONIC{where}[name]``."""
    values = with_defaults(declared, given)
    return [Error(f"SYMFONIC{where}[{name!r}]{message}", hint=hint, id=id)
            for name in names for message, hint in declared[name].problems(values[name], values)]


def _import_errors(paths: Mapping[str, Any], hint: str) -> list[Error]:
    """E002 for each dotted path (by where it is set) that does not import."""
    errors = []
    for where, path in sorted(paths.items()):
        try:
            import_string(path)
        except ImportError as exc:
            errors.append(Error(f"SYMFONIC{where} = {path!r} cannot be imported: {exc}",
                                hint=hint, id="symfonic_django.E002"))
    return errors


def _dotted_paths(user: dict[str, Any]) -> dict[str, str]:
    """The dotted paths ``user`` gives, by where: each hook's, each agent's."""
    paths = {f"[{k!r}]": user[k] for k in HOOKS if isinstance(user.get(k), str)}
    agents = user.get("AGENTS", SETTINGS["AGENTS"].default)
    if not SETTINGS["AGENTS"].problems(agents, user):
        paths.update({f"['AGENTS'][{n!r}]": p for n, p in agents.items() if isinstance(p, str)})
    return paths


@register(Tags.compatibility)
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    """Every key of ``SYMFONIC`` but the API's limits and ``NOTIFY`` (E001, E002, E003)."""
    user = _user_settings()
    if not isinstance(user, dict):
        return [Error("SYMFONIC must be a dict.", hint="Set SYMFONIC = {...} in settings.",
                      id="symfonic_django.E003")]
    errors = [Error(f"SYMFONIC[{key!r}] is not a setting of symfonic_django; it would be "
                    "accepted and do nothing.",
                    hint=REMOVED_SETTINGS.get(key, f"Known keys: {', '.join(sorted(SETTINGS))}."),
                    id="symfonic_django.E001")
              for key in sorted(set(user) - set(SETTINGS))]
    errors += _value_errors("", SETTINGS, user, [*HOOKS, "AGENTS"], "symfonic_django.E003")
    errors += _import_errors(_dotted_paths(user), CALLABLE_HINT)
    return errors + _value_errors("", SETTINGS, user, PLAIN, "symfonic_django.E003")


@register(Tags.compatibility)
def check_api_limits(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    """``MAX_JSON_DEPTH``, ``THROTTLE_CACHE`` and the failed-token limit (E003)."""
    user = _user_settings()
    if not isinstance(user, dict):
        return []  # check_settings says so
    return _value_errors("", SETTINGS, user, API_LIMITS, "symfonic_django.E003")


def notify_given() -> dict[str, Any] | None:
    """``SYMFONIC["NOTIFY"]`` as given, or None when it is not a dict (E101 says so)."""
    user = _user_settings()
    value = user.get("NOTIFY", {}) if isinstance(user, dict) else {}
    return value if isinstance(value, dict) else None


@register(Tags.compatibility)
def check_notifications(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    """Every ``NOTIFY`` value (E101, E002 for a path that does not import, E102)."""
    user = _user_settings()
    notify = notify_given()
    if notify is None:
        return _value_errors("", SETTINGS, user, ["NOTIFY"], "symfonic_django.E101")
    errors = [Error(f"SYMFONIC['NOTIFY'][{key!r}] is not a notification setting; it would be "
                    "accepted and do nothing.",
                    hint=f"Known keys: {', '.join(sorted(NOTIFY_SETTINGS))}.",
                    id="symfonic_django.E101")
              for key in sorted(set(notify) - set(NOTIFY_SETTINGS))]
    for name, setting in NOTIFY_SETTINGS.items():
        errors += _value_errors("['NOTIFY']", NOTIFY_SETTINGS, notify, [name],
                                "symfonic_django.E101")
        if setting.imports and isinstance(notify.get(name), str):
            errors += _import_errors({f"['NOTIFY'][{name!r}]": notify[name]},
                                     f"Give the dotted path of a callable "
                                     f"({setting.signature}).")
    return errors + _check_webhooks(notify.get("WEBHOOKS", NOTIFY_SETTINGS["WEBHOOKS"].default))


def _webhook_error(message: str, hint: str) -> Error:
    return Error(f"SYMFONIC['NOTIFY']['WEBHOOKS']{message}", hint=hint,
                 id="symfonic_django.E102")


def _check_webhooks(hooks: Any) -> list[Error]:
    if not isinstance(hooks, list | tuple) or not all(isinstance(h, dict) for h in hooks):
        return [_webhook_error(" must be a list of dicts.",
                               "[{'NAME': 'ops', 'URL': 'https://...', 'SECRET': 'whsec_...'}]")]
    errors = []
    names: set[str] = set()
    for i, hook in enumerate(hooks):
        where = f"[{i}]"
        errors += [_webhook_error(f"{where}[{key!r}] is not an endpoint setting.",
                                  f"Known keys: {', '.join(sorted(WEBHOOK_KEYS))}.")
                   for key in sorted(set(hook) - WEBHOOK_KEYS)]
        name = hook.get("NAME")
        if not isinstance(name, str) or not name.strip() or len(name) > 254:
            errors.append(_webhook_error(f"{where} needs a NAME, a short text.",
                                         "Deliveries name their endpoint by it (a URL may "
                                         "hold a credential; a name does not)."))
        elif name in names:
            errors.append(_webhook_error(f"{where}: the NAME {name!r} is used twice.",
                                         "Give each endpoint its own NAME."))
        else:
            names.add(name)
        errors += _endpoint_errors(where, hook)
    return errors


def _endpoint_errors(where: str, hook: dict[str, Any]) -> list[Error]:
    """What is wrong with one endpoint's URL, SECRET, EVENTS, SCOPES and INCLUDE_TOKEN."""
    errors = []
    if not is_http_url(hook.get("URL")):
        errors.append(_webhook_error(f"{where}['URL'] must be an http(s) URL, not "
                                     f"{hook.get('URL')!r}.", "The receiver's address."))
    if not is_webhook_secret(hook.get("SECRET")):
        # Never the secret itself in the message: check output ends up in logs.
        errors.append(_webhook_error(f"{where}['SECRET'] is not a Standard Webhooks "
                                     "secret.", "'whsec_' followed by the base64 of 24 to "
                                     "64 random bytes, e.g. 'whsec_' + base64 of "
                                     "secrets.token_bytes(32)."))
    events = hook.get("EVENTS")
    if events is not None and (not isinstance(events, list | tuple)
                               or not set(events) <= set(EVENT_TYPES)):
        errors.append(_webhook_error(f"{where}['EVENTS'] must list event types of "
                                     f"{', '.join(EVENT_TYPES)}, not {events!r}.",
                                     "Leave it out for every event type."))
    scopes = hook.get("SCOPES")
    if scopes is not None and (not isinstance(scopes, list | tuple)
                               or not all(isinstance(s, str) for s in scopes)):
        errors.append(_webhook_error(f"{where}['SCOPES'] must list scope keys, not "
                                     f"{scopes!r}.", "Leave it out for every scope."))
    if not isinstance(hook.get("INCLUDE_TOKEN", False), bool):
        errors.append(_webhook_error(f"{where}['INCLUDE_TOKEN'] must be True or False.",
                                     "False (the default) keeps tokens out of webhooks."))
    return errors
