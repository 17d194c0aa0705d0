"""Answers against random schemas, in Python (``answer_pause``) and over HTTP
(``POST pauses/{id}/answer/``).

Each example is a fresh question pause with a small generated ``answer_schema``
and a generated value: mostly one shaped like the schema (so it often fits),
sometimes any JSON at all (big ints, unicode with lone surrogates, NUL, deep-ish
nesting). The outcome is either acceptance, and then the value fits the schema
by ``jsonschema`` and the row holds exactly that value, or a typed refusal with
the row unchanged. Never a 5xx, never another exception.
"""

from __future__ import annotations

import json
import math
from typing import Any

import jsonschema
import pytest
from django.core.cache import cache
from hypothesis import given
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from symfonic_django import pauses
from symfonic_django.binding import PauseBinding
from symfonic_django.exceptions import SymfonicError
from symfonic_django.models import Pause, PauseKind, PauseStatus, Run, RunStatus
from tests.testapp.seed import seed_users

from ..conftest import snapshot
from . import fuzz_settings

pytestmark = pytest.mark.django_db

API = "/api/symfonic/"

#: Every code point, lone surrogates included (Hypothesis leaves them out by default).
ANY_CHARACTER = st.characters(exclude_categories=())
scalars = (st.none() | st.booleans() | st.integers()
           | st.integers(min_value=-(10**40), max_value=10**40)
           | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(alphabet=ANY_CHARACTER, max_size=12)
           | st.sampled_from(["\x00", "a\x00b", "\ud800", "\udfff x", "é", "𝄞"]))
any_json = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=20,
)
#: Nesting a little past what a person writes, well under the parser's depth cap.
deep_json = st.integers(1, 40).flatmap(
    lambda depth: scalars.map(lambda leaf: _nest(leaf, depth)))


def _nest(leaf: Any, depth: int) -> Any:
    for i in range(depth):
        leaf = [leaf] if i % 2 else {"k": leaf}
    return leaf


# --- schemas --------------------------------------------------------------------

def _number_schema(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    bound = st.integers(-1000, 1000) if kind == "integer" else st.floats(-1e6, 1e6)
    return st.fixed_dictionaries({"type": st.just(kind)}, optional={
        "minimum": bound, "maximum": bound, "exclusiveMinimum": bound,
        "multipleOf": st.sampled_from([1, 2, 5, 0.5, 0.01, 0.1, 3])})


leaf_schemas = st.one_of(
    _number_schema("integer"), _number_schema("number"),
    st.fixed_dictionaries({"type": st.just("string")}, optional={
        "minLength": st.integers(0, 5), "maxLength": st.integers(0, 20)}),
    st.lists(scalars.filter(lambda v: not isinstance(v, str) or v.isprintable()),
             min_size=1, max_size=4).map(lambda values: {"enum": values}),
    st.just({"type": "boolean"}), st.just({"type": "null"}),
)


def _compound(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    array = st.fixed_dictionaries({"type": st.just("array"), "items": children}, optional={
        "minItems": st.integers(0, 2), "maxItems": st.integers(0, 4)})
    obj = st.dictionaries(st.sampled_from("abcde"), children, max_size=4).flatmap(
        lambda props: st.fixed_dictionaries({
            "type": st.just("object"), "properties": st.just(props),
            "required": st.lists(st.sampled_from(sorted(props) or ["a"]), unique=True,
                                 max_size=len(props))}))
    return array | obj


schemas = st.recursive(leaf_schemas, _compound, max_leaves=6)


def shaped_like(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values shaped by ``schema`` (often fitting it, near its bounds), or any JSON."""
    kind = schema.get("type")
    if "enum" in schema:
        near: st.SearchStrategy[Any] = st.sampled_from(schema["enum"])
    elif kind in ("integer", "number"):
        step = schema.get("multipleOf", 1)
        near = st.integers(-2000, 2000).map(lambda n: n * step) | st.floats(
            -1e6, 1e6) | st.sampled_from([schema.get(k) for k in
                                         ("minimum", "maximum", "exclusiveMinimum")
                                         if k in schema] or [0])
    elif kind == "string":
        near = st.text(alphabet=ANY_CHARACTER, max_size=25)
    elif kind == "array":
        near = st.lists(shaped_like(schema["items"]), max_size=5)
    elif kind == "object":
        near = st.fixed_dictionaries(
            {k: shaped_like(v) for k, v in schema["properties"].items()
             if k in schema["required"]},
            optional={k: shaped_like(v) for k, v in schema["properties"].items()
                      if k not in schema["required"]})
    else:
        near = st.sampled_from([True, False, None])
    return st.one_of(near, near, near, any_json)


answers = schemas.flatmap(lambda schema: st.tuples(
    st.just(schema), st.one_of(shaped_like(schema), deep_json)))


# --- pauses ------------------------------------------------------------------------

def question(schema: dict[str, Any], scope: str = "acme") -> Pause:
    """A pending question pause with ``schema``, written directly (fast; no turn runs)."""
    run = Run(agent="question", scope_key=scope, status=RunStatus.PAUSED, input={})
    run.root_id = run.id
    run.save(force_insert=True)
    binding = PauseBinding(pin=None, scope=None, run_id=str(run.id), root_run_id=str(run.id),
                           session_id="", thread_id="", checkpoint_id=None)
    pause, _ = pauses.create_pause(run=run, binding=binding, kind=PauseKind.QUESTION,
                                   prompt={"question": "Which?"}, answer_schema=schema)
    return pause


def same_json(a: Any, b: Any) -> bool:
    """Equal as JSON values: ``1 == 1.0`` as JSON numbers, floats compared exactly."""
    if isinstance(a, float) or isinstance(b, float):
        return (isinstance(a, int | float) and isinstance(b, int | float)
                and not isinstance(a, bool) and not isinstance(b, bool)
                and math.isclose(a, b, rel_tol=0, abs_tol=0))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def check_accepted(pause: Pause, schema: dict[str, Any], value: Any) -> None:
    jsonschema.Draft202012Validator(schema).validate(value)
    row = Pause.objects.get(pk=pause.pk)
    assert row.status == PauseStatus.ANSWERED
    assert same_json(row.answer, value), (row.answer, value)


@pytest.mark.parametrize("value", ["\x00", "\ud800", {"k": "a\x00"}, ["\udfff x"]],
                         ids=["nul", "lone-high-surrogate", "nul-in-object", "lone-low-surrogate"])
def test_answer_pause_refuses_text_jsonb_cannot_store_with_a_typed_error(
        tenants: dict[str, Any], value: Any) -> None:
    """Found by the fuzzer below: on PostgreSQL these were a ``DataError`` from jsonb."""
    pause = question(None)
    before = snapshot(pause)
    with pytest.raises(SymfonicError):
        pauses.answer_pause(pause.pk, value, dispatch=False)
    assert snapshot(pause) == before


def test_answer_pause_accepts_only_fitting_values_and_stores_them_unchanged(tenants: dict[str, Any]) -> None:
    outcomes = {"accepted": 0, "refused": 0}

    @fuzz_settings(150)
    @given(case=answers)
    def answer(case: tuple[dict[str, Any], Any]) -> None:
        schema, value = case
        pause = question(schema)
        before = snapshot(pause)
        try:
            pauses.answer_pause(pause.pk, value, dispatch=False)
        except SymfonicError:
            outcomes["refused"] += 1
            assert snapshot(pause) == before
            return
        outcomes["accepted"] += 1
        check_accepted(pause, schema, value)

    answer()
    assert outcomes["accepted"] and outcomes["refused"], outcomes
    print(f"\nanswer_pause: {outcomes}")


def test_the_answer_endpoint_never_answers_5xx_and_refusals_change_nothing(tenants: dict[str, Any]) -> None:
    seed_users()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get(user__username='alice').key}")
    statuses: dict[int, int] = {}

    @fuzz_settings(100)
    @given(case=answers)
    def answer(case: tuple[dict[str, Any], Any]) -> None:
        schema, value = case
        pause = question(schema)
        before = snapshot(pause)
        cache.clear()
        # Escaped as a client would send it: a lone surrogate cannot be UTF-8 encoded.
        response = client.post(f"{API}pauses/{pause.pk}/answer/", json.dumps({"answer": value}),
                               content_type="application/json")
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        assert response.status_code < 500, (schema, value, response.content[:500])
        if response.status_code == 202:
            check_accepted(pause, schema, value)
            return
        assert 400 <= response.status_code < 500, response.status_code
        assert set(response.json()) == {"code", "detail"}, response.json()
        assert snapshot(pause) == before

    answer()
    assert 202 in statuses and any(400 <= s < 500 for s in statuses), statuses
    print(f"\npauses/{{id}}/answer/: {sum(statuses.values())} answers, statuses {statuses}")
