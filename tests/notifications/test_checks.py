"""System checks of ``SYMFONIC["NOTIFY"]``: the exact messages, by id, per misconfiguration.

Each test compares the whole list, so a new, missing or reworded message fails here.
"""

from __future__ import annotations

from typing import Any

from django.core.checks import Error, Warning
from django.test import override_settings

from symfonic_django.checks import check_notification_delivery, check_notifications
from symfonic_django.conf import NOTIFY_DEFAULTS

from .conftest import SECRET, SITE_URL

REVIEWER_EMAILS = "tests.testapp.scopes.reviewer_emails"
KNOWN = ", ".join(sorted(NOTIFY_DEFAULTS))
HOOK = {"NAME": "ops", "URL": "https://hooks.example.com/symfonic", "SECRET": SECRET}


def notify(**keys: Any) -> Any:
    return override_settings(SYMFONIC={"NOTIFY": keys})


def e101(message: str, hint: str) -> Error:
    return Error(f"SYMFONIC['NOTIFY']{message}", hint=hint, id="symfonic_django.E101")


def e102(message: str, hint: str) -> Error:
    return Error(f"SYMFONIC['NOTIFY']['WEBHOOKS']{message}", hint=hint,
                 id="symfonic_django.E102")


def test_the_test_and_example_settings_are_clean() -> None:
    assert check_notifications() == [] and check_notification_delivery() == []


@override_settings(SYMFONIC={})
def test_no_notify_setting_gives_no_message() -> None:
    assert check_notifications() == [] and check_notification_delivery() == []


@notify(SITE_URL=SITE_URL, REVIEWER_EMAILS=REVIEWER_EMAILS, FROM_EMAIL="reviews@example.com",
        INCLUDE_TOKEN=True, MAX_ATTEMPTS=1, RETRY_BACKOFF=0.5, RETRY_BACKOFF_MAX=0.5,
        TIMEOUT=1, WEBHOOKS=[{**HOOK, "EVENTS": ["pause.requested", "run.failed"],
                              "SCOPES": ["acme"], "INCLUDE_TOKEN": False}])
def test_every_key_with_a_valid_value_is_accepted() -> None:
    assert check_notifications() == [] and check_notification_delivery() == []


@override_settings(SYMFONIC={"NOTIFY": ["not", "a", "dict"]})
def test_notify_must_be_a_dict() -> None:
    assert check_notifications() == [e101(
        " must be a dict.", "For example {'REVIEWER_EMAILS': "
        "'myproject.reviewers.emails_for_scope', 'SITE_URL': 'https://review.example.com'}.")]


@notify(SITE_URL="review.example.com/admin?x=1", EMAILS="x", REVIEWER_EMAILS=42,
        FROM_EMAIL="", INCLUDE_TOKEN="yes", MAX_ATTEMPTS=0, RETRY_BACKOFF=0,
        RETRY_BACKOFF_MAX=True, TIMEOUT="10")
def test_each_bad_value_is_an_e101() -> None:
    assert check_notifications() == [
        e101("['EMAILS'] is not a notification setting; it would be accepted and do nothing.",
             f"Known keys: {KNOWN}."),
        e101("['SITE_URL'] must be an http(s) origin, not 'review.example.com/admin?x=1'.",
             "For example 'https://review.example.com': links to review pages start with it."),
        e101("['REVIEWER_EMAILS'] must be None, a dotted path or a callable, not 42.",
             "A callable scope_key -> iterable of email addresses."),
        e101("['FROM_EMAIL'] must be None or an address, not ''.",
             "None sends from DEFAULT_FROM_EMAIL."),
        e101("['INCLUDE_TOKEN'] must be True or False, not 'yes'.",
             "False (the default) keeps tokens out of emails."),
        e101("['MAX_ATTEMPTS'] must be a whole number of at least 1, not 0.",
             "The default is 8."),
        e101("['RETRY_BACKOFF'] must be a number of seconds above 0, not 0.",
             "The default is 60.0."),
        e101("['RETRY_BACKOFF_MAX'] must be a number of seconds above 0, not True.",
             "The default is 21600.0."),
        e101("['TIMEOUT'] must be a number of seconds above 0, not '10'.",
             "The default is 10.0."),
    ]


@notify(RETRY_BACKOFF=60, RETRY_BACKOFF_MAX=30)
def test_a_longest_wait_below_the_first_is_an_e101() -> None:
    assert check_notifications() == [e101(
        "['RETRY_BACKOFF_MAX'] is below RETRY_BACKOFF.",
        "The longest wait between attempts is at least the first.")]


@notify(REVIEWER_EMAILS="tests.testapp.scopes.no_such_function")
def test_a_reviewer_emails_path_that_does_not_import_is_an_e002() -> None:
    errors = check_notifications()
    assert [e.id for e in errors] == ["symfonic_django.E002"]
    assert errors[0].msg.startswith("SYMFONIC['NOTIFY']['REVIEWER_EMAILS'] = "
                                    "'tests.testapp.scopes.no_such_function' cannot be "
                                    "imported: ")


@notify(WEBHOOKS={"URL": "https://hooks.example.com"})
def test_webhooks_must_be_a_list_of_dicts() -> None:
    assert check_notifications() == [e102(
        " must be a list of dicts.",
        "[{'NAME': 'ops', 'URL': 'https://...', 'SECRET': 'whsec_...'}]")]


SECRET_HINT = ("'whsec_' followed by the base64 of 24 to 64 random bytes, e.g. 'whsec_' + "
               "base64 of secrets.token_bytes(32).")


@notify(WEBHOOKS=[
    {"URL": "ftp://hooks.example.com", "SECRET": "hunter2", "COLOR": "red"},
    {**HOOK, "SECRET": "whsec_c2hvcnQ=", "EVENTS": ["pause.requested", "pause.approved"],
     "SCOPES": "acme", "INCLUDE_TOKEN": 1},
    {**HOOK, "URL": "not a url"},
])
def test_each_bad_endpoint_is_an_e102_that_never_shows_the_secret() -> None:
    errors = check_notifications()
    assert errors == [
        e102("[0]['COLOR'] is not an endpoint setting.",
             "Known keys: EVENTS, INCLUDE_TOKEN, NAME, SCOPES, SECRET, URL."),
        e102("[0] needs a NAME, a short text.",
             "Deliveries name their endpoint by it (a URL may hold a credential; a name "
             "does not)."),
        e102("[0]['URL'] must be an http(s) URL, not 'ftp://hooks.example.com'.",
             "The receiver's address."),
        e102("[0]['SECRET'] is not a Standard Webhooks secret.", SECRET_HINT),
        e102("[1]['SECRET'] is not a Standard Webhooks secret.", SECRET_HINT),
        e102("[1]['EVENTS'] must list event types of pause.requested, pause.answered, "
             "pause.expired, run.completed, run.failed, pause.reminder, pause.escalated, not "
             "['pause.requested', 'pause.approved'].", "Leave it out for every event type."),
        e102("[1]['SCOPES'] must list scope keys, not 'acme'.", "Leave it out for every scope."),
        e102("[1]['INCLUDE_TOKEN'] must be True or False.",
             "False (the default) keeps tokens out of webhooks."),
        e102("[2]: the NAME 'ops' is used twice.", "Give each endpoint its own NAME."),
        e102("[2]['URL'] must be an http(s) URL, not 'not a url'.", "The receiver's address."),
    ]
    assert not any("hunter2" in e.msg or "hunter2" in (e.hint or "") for e in errors)


@notify(REVIEWER_EMAILS=REVIEWER_EMAILS, WEBHOOKS=[HOOK])
@override_settings(EMAIL_BACKEND="django.core.mail.backends.dummy.EmailBackend",
                   DEFAULT_FROM_EMAIL="webmaster@localhost")
def test_emails_that_would_go_nowhere_or_without_a_link_are_warned_about() -> None:
    assert check_notification_delivery() == [
        Warning("Notifications are configured without SYMFONIC['NOTIFY']['SITE_URL']: their "
                "links to review pages are paths, which an email client cannot open.",
                hint="Set it to the origin reviewers reach the admin at, e.g. "
                     "'https://review.example.com'.", id="symfonic_django.W101"),
        Warning("SYMFONIC['NOTIFY']['REVIEWER_EMAILS'] is set, but EMAIL_BACKEND is Django's "
                "dummy backend: every email to reviewers is dropped and counted as delivered.",
                hint="Set EMAIL_BACKEND (and EMAIL_HOST, ...) to a backend that sends mail.",
                id="symfonic_django.W102"),
        Warning("Emails to reviewers would be sent from 'webmaster@localhost', Django's "
                "placeholder, which many mail servers refuse.",
                hint="Set DEFAULT_FROM_EMAIL, or SYMFONIC['NOTIFY']['FROM_EMAIL'].",
                id="symfonic_django.W103"),
    ]


@notify(SITE_URL=SITE_URL, REVIEWER_EMAILS=REVIEWER_EMAILS, FROM_EMAIL="reviews@example.com")
@override_settings(DEFAULT_FROM_EMAIL="webmaster@localhost")
def test_a_sender_of_its_own_needs_no_default_from_email() -> None:
    assert check_notification_delivery() == []
