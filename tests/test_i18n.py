"""The reviewer's pages speak the reviewer's language; English stays the default.

The app ships French (``symfonic_django/locale/fr``): a browser that asks for
it (``Accept-Language: fr``, read by the example's ``LocaleMiddleware``) gets
the inbox, the pause list, the review page, the live viewer and their
messages in French, and the viewer's JavaScript its words from Django's
JavaScript catalog (``symfonic_jsi18n``). Every template's visible text is
inside a translation tag, and every message of the catalogs is translated.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.template.base import Lexer, TokenType
from django.test import Client
from django.urls import reverse

from symfonic_django.models import Pause
from symfonic_django.viewer import viewer_url
from tests.testapp.models import Tenant
from tests.testapp.seed import seed_users

from .admin_pages import login, messages_of, refund_pause
from .conftest import need

APP = Path(__file__).resolve().parent.parent / "symfonic_django"
FRENCH = {"HTTP_ACCEPT_LANGUAGE": "fr"}


@pytest.fixture
def users(tenants: dict[str, Tenant]) -> dict[str, Any]:
    return seed_users()


def page(client: Client, url: str, **headers: Any) -> str:
    response = client.get(url, **headers)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def review_url(pause: Pause) -> str:
    return reverse("admin:symfonic_django_pause_change", args=[pause.pk])


@pytest.mark.django_db
def test_the_inbox_is_in_french_for_a_french_browser_and_in_english_otherwise(users):
    refund_pause("acme", amount=99.99)
    alice = login("alice")
    french = page(alice, reverse("admin:symfonic_django_pause_inbox"), **FRENCH)
    assert "<html lang=\"fr\"" in french
    for words in ("Boîte de réception", "En attente", "Toutes les pauses", "demandé il y a",
                  "expire dans"):
        assert words in french, words
    english = page(alice, reverse("admin:symfonic_django_pause_inbox"))
    assert "All pauses" in english and "expires in" in english
    assert "Boîte de réception" not in english


@pytest.mark.django_db
def test_the_review_page_its_form_and_its_outcome_lines_are_in_french(users):
    pause = refund_pause("acme", amount=40)
    french = page(login("alice"), review_url(pause), **FRENCH)
    for words in ("Envoyer la décision", "Modifier et approuver", "Message à l’agent",
                  "Commentaire", "l’agent exécute refund(", "Audit", "Personne n’a encore agi",
                  "Valeur proposée", "Ce que l’agent a fait avant de demander"):
        assert words in french, words
    assert "Send decision" not in french


@pytest.mark.django_db
def test_a_form_error_and_the_message_after_a_decision_are_in_french(users):
    pause = refund_pause("acme", amount=40)
    alice = login("alice")
    refused = alice.post(review_url(pause), {}, **FRENCH)
    assert refused.status_code == 200
    assert "Choisissez une décision pour refund." in refused.content.decode()
    assert "La réponse n’a pas été envoyée" in " ".join(messages_of(refused))
    answered = alice.post(review_url(pause), {"decision_0": "approve"}, **FRENCH)
    assert answered.status_code == 302
    assert any(m.startswith("Votre réponse a été enregistrée ; l’agent continue dans "
                            "l’exécution ") for m in messages_of(answered))


@pytest.mark.django_db
def test_the_pause_list_its_columns_and_bulk_actions_are_in_french(users):
    pause = refund_pause("acme", amount=40)
    alice = login("alice")
    changelist = reverse("admin:symfonic_django_pause_changelist")
    french = page(alice, changelist, **FRENCH)
    for words in ("Approuver les pauses sélectionnées…", "Rejeter les pauses sélectionnées…",
                  "Action ou question", "Répondu par", "Périmètre"):
        assert words in french, words
    confirmation = alice.post(changelist, {"action": "approve_selected",
                                           "_selected_action": [str(pause.pk)]}, **FRENCH)
    text = confirmation.content.decode()
    assert "Approuver 1 pause ?" in text and "Oui, approuver 1" in text
    done = alice.post(changelist, {"action": "approve_selected", "post": "yes",
                                   "_selected_action": [str(pause.pk)]}, **FRENCH)
    assert "1 pause approuvée." in messages_of(done)


@pytest.mark.django_db
def test_the_models_their_fields_and_filters_are_named_in_french(users):
    pause = refund_pause("acme", amount=40)
    alice = login("alice")
    index = page(alice, reverse("admin:index"), **FRENCH)
    for words in ("Exécutions", "Événements de tour", "Décisions", "Envois de notification"):
        assert words in index, words
    runs = page(alice, reverse("admin:symfonic_django_run_changelist"), **FRENCH)
    for words in ("Clé de périmètre", "Tentatives", "Créé le", "Par statut"):
        assert words in runs, words
    run = page(alice, reverse("admin:symfonic_django_run_change", args=[pause.run_id]),
               **FRENCH)
    for words in ("Id de session", "Époque", "Commencé le", "cette exécution"):
        assert words in run, words
    decisions = page(alice, reverse("admin:symfonic_django_decision_changelist"), **FRENCH)
    assert "Par action" in decisions and "Par via" in decisions
    english = page(alice, reverse("admin:index"))
    assert "Notification deliveries" in english and "Turn events" in english


@pytest.mark.django_db
def test_the_viewer_page_is_in_french_and_loads_the_catalog_before_viewer_js(users):
    pause = refund_pause("acme", amount=40)
    french = page(login("alice"), viewer_url(pause.run), **FRENCH)
    for words in ("Transcription", "connexion…", "En attente du premier événement du tour…",
                  "Journal des événements", "heures en UTC"):
        assert words in french, words
    catalog, script = french.find(reverse("symfonic_jsi18n")), french.find("viewer.js")
    assert 0 < catalog < script, "the catalog must load before viewer.js"


def catalog_of(response: Any) -> dict[str, Any]:
    found = re.search(r"const newcatalog = (\{.*?\});\n", response.content.decode(), re.S)
    assert found, "no catalog in the response"
    catalog: dict[str, Any] = json.loads(found.group(1))
    return catalog


@pytest.mark.django_db
def test_the_javascript_catalog_serves_the_viewers_words_in_french():
    url = reverse("symfonic_jsi18n")
    catalog = catalog_of(Client().get(url, **FRENCH))
    assert catalog["Approval requested"] == "Approbation demandée"
    assert catalog["connecting…"] == "connexion…"
    assert catalog["(none)"] == "(aucune)"  # review.js's word for an emptied input
    waiting = catalog["Waiting for %(n)s answer. Answering continues the turn in a new run; "
                      "this page follows it."]
    assert waiting[1].startswith("En attente de %(n)s réponses.")
    # English: no catalog at all, the words as written in the JavaScript.
    assert "newcatalog" not in Client().get(url).content.decode()


# --- every word marked, every message translated -------------------------------------------

def visible_english(source: str) -> list[str]:
    """The words a template shows outside ``{% translate %}`` / ``{% blocktranslate %}``:
    text nodes and ``title`` / ``aria-label`` / ``placeholder`` / submit values, without
    markup, comments, scripts or the ``bodyclass`` block (CSS class names)."""
    kept, inside = [], 0
    for token in Lexer(source).tokenize():
        words = token.contents.split()
        tag = words[0] if token.token_type == TokenType.BLOCK and words else ""
        if tag in ("blocktranslate", "blocktrans", "comment") or words[:2] == [
                "block", "bodyclass"]:
            inside += 1
        elif tag in ("endblocktranslate", "endblocktrans", "endcomment") or (
                tag == "endblock" and inside):
            inside -= 1
        elif token.token_type == TokenType.TEXT and not inside:
            kept.append(token.contents)
            continue
        kept.append("\x00")
    text = re.sub(r"<(script|style)\b.*?</\1>|<!--.*?-->", " ", "".join(kept), flags=re.S)
    shown = re.findall(r'\b(?:title|aria-label|placeholder|alt)="([^"\x00]*)"', text)
    shown += re.findall(r'<input[^>]*type="submit"[^>]*value="([^"\x00]*)"', text)
    text = re.sub(r"&\w+;|&#\d+;", " ", re.sub(r"<[^>]*>", " ", text))
    return re.findall(r"[A-Za-z]{2,}", " ".join([text, *shown]))


def test_visible_english_finds_unmarked_text_and_ignores_marked_text():
    assert visible_english('<p title="Hint">Hello {{ name }}</p>') == ["Hello", "Hint"]
    assert visible_english('{% load i18n %}<p>{% translate "Hello" %}</p>'
                           '{% blocktranslate %}Hi {{ name }}{% endblocktranslate %}') == []
    assert visible_english("{% block bodyclass %}app-x model-y{% endblock %}") == []


@pytest.mark.parametrize("template", sorted(
    str(p.relative_to(APP / "templates")) for p in (APP / "templates").rglob("*.*")))
def test_no_template_shows_english_outside_a_translation_tag(template):
    assert visible_english((APP / "templates" / template).read_text()) == []


@pytest.mark.parametrize("domain", ["django", "djangojs"])
def test_every_message_of_the_french_catalogs_is_translated_and_compiled(domain, tmp_path):
    po = APP / "locale" / "fr" / "LC_MESSAGES" / f"{domain}.po"
    entries = po.read_text(encoding="utf-8").split("\n\n")[1:]
    assert entries, f"{po} is empty"
    untranslated = [e for e in entries if re.search(r'^msgstr(\[\d\])? ""$', e, re.M)
                    and not re.search(r'^msgstr(\[\d\])? ""\n"', e, re.M)]
    assert untranslated == []
    assert "#, fuzzy" not in po.read_text(encoding="utf-8")
    # The committed .mo is what compilemessages makes of the committed .po.
    need(shutil.which("msgfmt") is not None, "msgfmt (gettext) is not installed")
    compiled = tmp_path / f"{domain}.mo"
    subprocess.run(["msgfmt", "--check-format", "-o", str(compiled), str(po)], check=True)
    assert po.with_suffix(".mo").read_bytes() == compiled.read_bytes(), \
        "run compilemessages (cd symfonic_django && manage.py compilemessages -l fr)"


def msgids(po: Path) -> set[str]:
    """The messages of a catalog, each as one line (``msgcat --no-wrap``)."""
    text = subprocess.run(["msgcat", "--no-wrap", "--no-location", str(po)], check=True,
                          capture_output=True, text=True).stdout
    return set(re.findall(r'^msgid "(.+)"$', text, re.M))


@pytest.mark.parametrize("domain", ["django", "djangojs"])
def test_the_french_catalogs_hold_every_message_the_code_marks(domain, tmp_path):
    """``makemessages`` run afresh over the app finds no message the committed catalog
    lacks, and the catalog keeps none the code no longer marks."""
    need(shutil.which("xgettext") is not None and shutil.which("msgcat") is not None,
         "gettext is not installed")
    copy = tmp_path / "symfonic_django"
    shutil.copytree(APP, copy, ignore=shutil.ignore_patterns("__pycache__", "migrations"))
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings",
           "PYTHONPATH": str(APP.parent)}
    subprocess.run([sys.executable, "-m", "django", "makemessages", "-l", "fr", "-d", domain,
                    "--no-obsolete"], cwd=copy, env=env, check=True, capture_output=True)
    committed = APP / "locale" / "fr" / "LC_MESSAGES" / f"{domain}.po"
    fresh = copy / "locale" / "fr" / "LC_MESSAGES" / f"{domain}.po"
    assert msgids(fresh) == msgids(committed), (
        "run makemessages and translate (cd symfonic_django && django-admin makemessages -l fr)")


def test_the_example_offers_english_and_french_and_reads_the_browsers_language(settings):
    assert [code for code, _ in settings.LANGUAGES] == ["en", "fr"]
    middleware = settings.MIDDLEWARE
    assert middleware.index("django.middleware.locale.LocaleMiddleware") == middleware.index(
        "django.contrib.sessions.middleware.SessionMiddleware") + 1
