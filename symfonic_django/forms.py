"""The reviewer's answer forms, built from the pause itself.

An approval's form follows its ``HITLRequest``: per action request, one choice
among that action's ``allowed_decisions`` (approve, edit & approve, reject,
respond), a JSON editor for the edited arguments and a message. A question's
form is generated from its ``answer_schema``. Either form only *builds* the
answer (``form.answer``) and checks it with the same rules the state machine
applies (``hitl``), so a reviewer sees a mistake next to the field; the
answer itself is then given to ``pauses.answer_pause``, which checks again.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from . import hitl, jsontext, pauses
from .conf import settings
from .exceptions import InvalidAnswer
from .models import Pause, PauseKind

#: The label of each decision, marked for translation: shown through ``decision_label``.
DECISION_LABELS = {
    "approve": gettext_noop("Approve"),
    "edit": gettext_noop("Edit & approve"),
    "reject": gettext_noop("Reject"),
    "respond": gettext_noop("Respond"),
}


def decision_label(decision: str) -> str:
    """The label of ``decision`` in the active language (the decision itself if unknown)."""
    return _(DECISION_LABELS[decision]) if decision in DECISION_LABELS else decision

#: A string field longer than this is edited in a textarea.
LONG_TEXT = 200

def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)


# --- JSON typed by a reviewer ----------------------------------------------------

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


# --- approvals ---------------------------------------------------------------

class ApprovalForm(forms.Form):
    """One decision per action request; ``answer`` is the resulting ``HITLResponse``.

    An action that may be edited gets one input per argument when its
    ``args_schema`` can be shown as fields (``arg_fields``), else a JSON editor.
    A post that carries ``args_<i>`` (the arguments as JSON) is read as JSON in
    either case, so a client that posts JSON keeps working. The inputs of an
    action whose decision is not an edit are ignored, whatever they hold.
    """

    def __init__(self, pause: Pause, *args: Any, reviewer: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pause = pause
        #: Who answers: the decisions offered are theirs (``pauses.offered_decisions``).
        self.reviewer = reviewer
        self.requests: list[dict[str, Any]] = pause.prompt["action_requests"]
        self.answer: dict[str, Any] | None = None
        #: Per action index, its per-argument inputs (empty: the JSON editor instead).
        self.arg_inputs: dict[int, list[ArgInput]] = {}
        for i, request in enumerate(self.requests):
            name = request["name"]
            allowed = self.allowed(i)
            errors = {"required": _("Choose a decision for %(name)s.") % {"name": name}}
            if "approve" in pauses.offered_decisions(pause, name) and "approve" not in allowed:
                # Not offered to this reviewer alone: their approval already counts (a page
                # opened before it did still shows the choice).
                errors["invalid_choice"] = _("You already approved this pause: it waits for "
                                             "other reviewers. You may still reject it.")
            self.fields[f"decision_{i}"] = forms.ChoiceField(
                label=_("Decision on %(name)s") % {"name": name},
                choices=[(d, decision_label(d)) for d in allowed],
                widget=forms.RadioSelect(attrs={"class": "symfonic-decision"}),
                error_messages=errors,
            )
            if "edit" in allowed:
                schema = hitl.review_config(pause.prompt, name).get("args_schema")
                inputs = arg_fields(schema, request.get("args", {}), prefix=f"args_{i}")
                self.arg_inputs[i] = inputs or []
                for item in inputs or []:
                    self.fields[item.name] = item.field
                self.fields[f"args_{i}"] = forms.CharField(
                    label=_("Arguments of %(name)s (JSON)") % {"name": name}, required=False,
                    strip=False,
                    initial=pretty_json(request.get("args", {})),
                    widget=forms.Textarea(attrs={"rows": max(4, len(request.get("args", {})) + 3),
                                                 "class": "symfonic-json", "spellcheck": "false"}),
                    help_text=_("Used with “Edit & approve”: the arguments the action runs "
                                "with."),
                )
            if {"reject", "respond"} & set(allowed):
                self.fields[f"message_{i}"] = forms.CharField(
                    label=_("Message to the agent"), required=False,
                    widget=forms.Textarea(attrs={"rows": 2}),
                    help_text=(_("Required to respond; an optional reason when rejecting.")
                               if "respond" in allowed
                               else _("An optional reason for rejecting.")),
                )
            for part in ("decision", "args", "message"):
                if f"{part}_{i}" in self.fields:
                    # Error messages are prefixed with what they are about, unless they say it.
                    self.fields[f"{part}_{i}"].subject = name  # type: ignore[attr-defined]
            for item in self.arg_inputs.get(i, []):
                item.field.subject = f"{name}: {item.label}"  # type: ignore[attr-defined]
        self.fields["comment"] = forms.CharField(
            label=_("Comment"), required=False, max_length=COMMENT_CHARS,
            widget=forms.Textarea(attrs={"rows": 2}),
            help_text=_("Kept in the audit with your decision, whichever it is; "
                        "the agent does not see it."))

    def full_clean(self) -> None:
        # The argument inputs of an action not being edited are left out of validation
        # (a disabled field takes its initial value): a blank or mistyped one must not
        # stand in the way of approving or rejecting.
        unused = [item.field for i, inputs in self.arg_inputs.items() for item in inputs
                  if self.is_bound and self.data.get(f"decision_{i}") != "edit"]
        for field in unused:
            field.disabled = True
        try:
            super().full_clean()
        finally:
            for field in unused:
                field.disabled = False

    def allowed(self, index: int) -> list[str]:
        return [d for d in pauses.offered_decisions(self.pause, self.requests[index]["name"],
                                                    self.reviewer)
                if d in DECISION_LABELS]

    def _decision(self, index: int, kind: str) -> tuple[dict[str, Any] | None, str]:
        """The decision for one action and the field its mistakes belong to."""
        name = self.requests[index]["name"]
        message = (self.cleaned_data.get(f"message_{index}") or "").strip()
        if kind == "edit":
            field = f"args_{index}"
            raw = self.cleaned_data.get(field) or ""
            inputs = self.arg_inputs.get(index)
            if inputs and not raw.strip():
                args = args_from_inputs(inputs, self.cleaned_data)
                if self._input_problems(index, inputs, args):
                    return None, field
                return {"type": "edit", "edited_action": {"name": name, "args": args}}, field
            try:
                args = parse_json(raw)
            except ValueError as exc:
                self.add_error(field, _("The arguments of %(name)s are %(problem)s.")
                               % {"name": name, "problem": exc})
                return None, field
            return {"type": "edit", "edited_action": {"name": name, "args": args}}, field
        if kind in ("reject", "respond"):
            decision: dict[str, Any] = {"type": kind}
            if message:
                decision["message"] = message
            return decision, f"message_{index}"
        return {"type": "approve"}, f"decision_{index}"

    def _input_problems(self, index: int, inputs: list[ArgInput], args: dict[str, Any]
                        ) -> bool:
        """Put each input's own schema refusal on that input, in words ("Enter a multiple
        of 0.01."), rather than the whole editor's "$.amount: ... is not a multiple of"."""
        schema = hitl.review_config(self.pause.prompt, self.requests[index]["name"]).get(
            "args_schema")
        found = False
        for item in inputs:
            value: Any = args
            for key in item.path:
                value = value.get(key, MISSING) if isinstance(value, dict) else MISSING
            problem = (leaf_problem(_property_schema(schema, item.path), value)
                       if value is not MISSING else None)
            if problem:
                self.add_error(item.name, problem)
                found = True
        return found

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        decisions = []
        for i, request in enumerate(self.requests):
            kind = cleaned.get(f"decision_{i}")
            if not kind:
                continue  # the field already carries its error
            decision, field = self._decision(i, kind)
            if decision is None:
                continue
            problem = jsontext.unstorable(decision)
            if problem:
                words = {"name": request["name"], "problem": problem}
                self.add_error(field, (
                    _("The arguments of %(name)s contain %(problem)s, which cannot be stored.")
                    if field.startswith("args_") else
                    _("The message on %(name)s contains %(problem)s, which cannot be stored."))
                    % words)
                continue
            # The state machine's own rule, applied to this one action so the
            # mistake is shown next to its field.
            single = {"action_requests": [request],
                      "review_configs": [hitl.review_config(self.pause.prompt, request["name"])]}
            try:
                hitl.validate_response(single, {"decisions": [decision]})
            except InvalidAnswer as exc:
                self.add_error(field if field in self.fields else None, exc.detail)
                continue
            decisions.append(decision)
        if not self.errors:
            self.answer = {"decisions": decisions}
        return cleaned

    def comment_field(self) -> forms.BoundField:
        """The comment's input, for the template."""
        return self["comment"]

    @property
    def comment(self) -> str:
        """For the audit row: the reviewer's comment, then the messages to the agent."""
        if not self.is_valid() or self.answer is None:
            return ""
        said = [self.cleaned_data.get("comment", "").strip(),
                *(d["message"] for d in self.answer["decisions"] if d.get("message"))]
        return "\n".join(text for text in said if text)

    def action_fields(self, index: int) -> dict[str, Any]:
        """The bound fields of one action, for the template; ``inputs`` are its
        per-argument inputs (``BoundField``, with ``depth`` and ``group`` for nesting)."""
        fields: dict[str, Any] = {part: self[f"{part}_{index}"]
                                  for part in ("decision", "args", "message")
                                  if f"{part}_{index}" in self.fields}
        fields["inputs"] = [{"field": self[item.name], "item": item}
                            for item in self.arg_inputs.get(index, [])]
        return fields


# --- an action's arguments as inputs ------------------------------------------------

#: The longest comment a reviewer may leave with a decision.
COMMENT_CHARS = 2000
#: Property names that can name an input (``args_0.amount``); others get the JSON editor.
_INPUT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: Keywords that constrain an object beyond its properties: fields cannot show them.
_OBJECT_ONLY = frozenset({"type", "properties", "required", "additionalProperties", "title",
                          "description", "$schema", "$id", "$comment", "default", "examples"})
_LEAF_TYPES = frozenset({"string", "number", "integer", "boolean"})
#: Integral floats below this are written as integers (a typed "50" is 50, not 50.0).
_EXACT_INTEGERS = 2 ** 53


@dataclass(frozen=True)
class ArgInput:
    """One argument of an action, edited through its own input.

    ``path`` is where it sits in the arguments (nested objects are fieldsets:
    ``group`` names the enclosing ones), ``proposed`` what the agent proposed
    there (``MISSING`` when nothing), ``required`` whether its object requires it.
    """

    name: str
    path: tuple[str, ...]
    label: str
    field: forms.Field
    proposed: Any
    required: bool

    @property
    def depth(self) -> int:
        return len(self.path) - 1

    @property
    def group(self) -> tuple[str, ...]:
        return self.path[:-1]

    @property
    def proposed_text(self) -> str:
        """The proposed value as the diff shows it."""
        return _("(none)") if self.proposed is MISSING else hitl.shown(self.proposed)


MISSING: Any = object()


def _leaf_type(schema: dict[str, Any]) -> str | None:
    """The input type of a property schema, or ``None`` if no input can express it."""
    if set(schema) - {"type", "enum", "title", "description", "default", "examples",
                      "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                      "multipleOf", "minLength", "maxLength", "pattern", "format", "const",
                      "$comment"}:
        return None
    if "enum" in schema:
        values = schema["enum"]
        ok = isinstance(values, list) and values and all(
            v is None or isinstance(v, str | int | float | bool) for v in values)
        return "enum" if ok else None
    kind = schema.get("type")
    if isinstance(kind, list) and len(kind) == 2 and "null" in kind:
        # Optional[X] (hitl.plain_schema): an input left empty leaves the argument out.
        kind = next(k for k in kind if k != "null")
    return kind if isinstance(kind, str) and kind in _LEAF_TYPES else None


def arg_fields(schema: Any, args: Any, *, prefix: str) -> list[ArgInput] | None:
    """Inputs for ``args`` under their object ``schema``, or ``None`` when fields cannot
    express it (no schema, arrays, ``oneOf``, ``$ref``, arguments the schema does not
    name, a property name no input can carry): the JSON editor edits those."""
    inputs: list[ArgInput] = []
    if not _collect(schema, args, (), prefix, inputs):
        return None
    return inputs or None


def _collect(schema: Any, args: Any, path: tuple[str, ...], prefix: str,
             inputs: list[ArgInput]) -> bool:
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return False
    properties = schema.get("properties")
    if not isinstance(properties, dict) or set(schema) - _OBJECT_ONLY:
        return False
    if not isinstance(schema.get("additionalProperties", True), bool):
        return False
    if args is not MISSING and (not isinstance(args, dict) or set(args) - set(properties)):
        return False  # an argument no input would show
    required = schema.get("required") or []
    for key, sub in properties.items():
        if not isinstance(key, str) or not _INPUT_NAME.match(key) or not isinstance(sub, dict):
            return False
        value = args.get(key, MISSING) if isinstance(args, dict) else MISSING
        where = (*path, key)
        if sub.get("type") == "object":
            if not _collect(sub, value, where, prefix, inputs):
                return False
            continue
        kind = _leaf_type(sub)
        if kind is None:
            return False
        label = str(sub.get("title") or key.replace("_", " ").capitalize())
        field = field_for(sub, required=False, label=label)
        if value is not MISSING:
            field.initial = json.dumps(value) if kind == "enum" else value
        inputs.append(ArgInput(name=f"{prefix}.{'.'.join(where)}", path=where, label=label,
                               field=field, proposed=value, required=key in required))
    return True


def _property_schema(schema: Any, path: tuple[str, ...]) -> Any:
    """The schema of the argument at ``path`` of an object ``schema`` (``None`` if unnamed)."""
    for key in path:
        properties = schema.get("properties") if isinstance(schema, dict) else None
        schema = properties.get(key) if isinstance(properties, dict) else None
    return schema


def leaf_problem(schema: Any, value: Any) -> str | None:
    """Why one argument's ``value`` breaks its own ``schema``, as a sentence for its input,
    for the keywords a form field does not check itself; ``None`` if none of them does."""
    if not isinstance(schema, dict):
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        step = schema.get("multipleOf")
        if isinstance(step, int | float) and step > 0 and (
                Decimal(str(value)) % Decimal(str(step)) != 0):
            return _("Enter a multiple of %(step)s.") % {"step": hitl.shown(step)}
        low, high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
        if isinstance(low, int | float) and value <= low:
            return _("Enter more than %(limit)s.") % {"limit": hitl.shown(low)}
        if isinstance(high, int | float) and value >= high:
            return _("Enter less than %(limit)s.") % {"limit": hitl.shown(high)}
    if isinstance(value, str) and isinstance(schema.get("pattern"), str):
        try:
            if re.search(schema["pattern"], value) is None:
                return _("Enter a value of the expected form.")
        except re.error:
            return None
    if "const" in schema and value != schema["const"]:
        return _("Only %(value)s is accepted here.") % {"value": hitl.shown(schema["const"])}
    return None


def _typed(value: Any) -> Any:
    """A number input's float as JSON writes it: 50.0 typed as "50" stays 50."""
    if isinstance(value, float) and value.is_integer() and abs(value) < _EXACT_INTEGERS:
        return int(value)
    return value


def args_from_inputs(inputs: list[ArgInput], cleaned: dict[str, Any]) -> dict[str, Any]:
    """The arguments the inputs spell. An input left empty is left out, unless the
    proposal had that very value; the schema then says whether it may be missing."""
    args: dict[str, Any] = {}
    for item in inputs:
        value = _typed(cleaned.get(item.name))
        if value is None or value == "" or (value is False and item.proposed is MISSING
                                             and not item.required):
            if item.proposed is MISSING or item.proposed != value:
                continue
        target = args
        for key in item.group:
            target = target.setdefault(key, {})
        target[item.path[-1]] = value
    return args


# --- questions -----------------------------------------------------------------

def _main_type(schema: dict[str, Any]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    return kind


def choice_labels(schema: Any) -> list[tuple[Any, str]] | None:
    """``(value, label)`` per value a choice schema allows, or ``None`` if it is not one:
    an ``enum`` (each value its own label), or a ``oneOf`` / ``anyOf`` of ``const`` values,
    each labelled by its ``title`` (JSON Schema's way to name a choice: "DHL" for "dhl")."""
    if not isinstance(schema, dict):
        return None
    if isinstance(schema.get("enum"), list):
        return [(v, str(v)) for v in schema["enum"]]
    options = schema.get("oneOf", schema.get("anyOf"))
    if not (isinstance(options, list) and options
            and all(isinstance(o, dict) and "const" in o for o in options)):
        return None
    return [(o["const"], str(o.get("title") or o["const"])) for o in options]


def field_for(schema: Any, *, required: bool, label: str) -> forms.Field:
    """A form field for one JSON Schema: enum → select, boolean → checkbox,
    integer / number → number inputs, string → text (textarea when long),
    anything else → a JSON textarea."""
    schema = schema if isinstance(schema, dict) else {}
    common: dict[str, Any] = {"label": schema.get("title") or label,
                              "help_text": schema.get("description", "")}
    if "default" in schema:
        common["initial"] = schema["default"]
    labels = choice_labels(schema)
    if labels is not None:
        # An empty first choice even when required: the reviewer picks, nothing is preselected.
        choices = [("", "---------"), *((json.dumps(v), label) for v, label in labels)]
        if "initial" in common:
            common["initial"] = json.dumps(common["initial"])
        return forms.TypedChoiceField(choices=choices, coerce=json.loads, empty_value=None,
                                      required=required, **common)
    kind = _main_type(schema)
    if kind == "boolean":
        # A checkbox always answers: unticked is False, never "missing".
        return forms.BooleanField(required=False, **common)
    if kind == "integer":
        return forms.IntegerField(required=required, min_value=schema.get("minimum"),
                                  max_value=schema.get("maximum"), **common)
    if kind == "number":
        return forms.FloatField(required=required, min_value=schema.get("minimum"),
                                max_value=schema.get("maximum"),
                                widget=forms.NumberInput(attrs={"step": "any"}), **common)
    if kind == "string":
        max_length = schema.get("maxLength")
        long = schema.get("format") == "textarea" or (max_length or 0) > LONG_TEXT
        return forms.CharField(required=required, max_length=max_length,
                               min_length=schema.get("minLength"),
                               widget=forms.Textarea(attrs={"rows": 4}) if long else None,
                               **common)
    common["help_text"] = common["help_text"] or _("A JSON value.")
    return JSONAnswerField(required=required,
                           widget=forms.Textarea(attrs={"rows": 4, "class": "symfonic-json"}),
                           **common)


class QuestionForm(forms.Form):
    """Fields generated from the question's ``answer_schema``; ``answer`` is the value.

    An object schema with ``properties`` gives one field per property (empty
    optional ones are left out of the answer); any other schema gives a
    single field; no schema at all gives a free-text answer.
    """

    ROOT = "answer"
    #: The comment's field, unless the schema has a property of that name.
    COMMENT = "review_comment"

    def __init__(self, pause: Pause, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("prefix", "q")
        super().__init__(*args, **kwargs)
        self.pause = pause
        self.schema = pause.answer_schema
        self.answer: Any = None
        schema = self.schema if isinstance(self.schema, dict) else {}
        found = schema.get("properties") if _main_type(schema) in ("object", None) else None
        properties: dict[str, Any] = found if isinstance(found, dict) else {}
        self.per_property = bool(properties)
        if self.per_property:
            required = set(schema.get("required") or [])
            for name, sub in properties.items():
                self.fields[name] = field_for(sub, required=name in required,
                                              label=name.replace("_", " ").capitalize())
        elif schema:
            self.fields[self.ROOT] = field_for(schema, required=True, label=_("Answer"))
        else:
            self.fields[self.ROOT] = forms.CharField(
                label=_("Answer"), widget=forms.Textarea(attrs={"rows": 4}))
        self.has_comment = self.COMMENT not in self.fields
        if self.has_comment:
            self.fields[self.COMMENT] = forms.CharField(
                label=_("Comment"), required=False, max_length=COMMENT_CHARS,
                widget=forms.Textarea(attrs={"rows": 2}),
                help_text=_("Kept in the audit with your answer; the agent does not see it."))

    def comment_field(self) -> forms.BoundField | None:
        """The comment's input, for the template (none if a property took its name)."""
        return self[self.COMMENT] if self.has_comment else None

    @property
    def comment(self) -> str:
        """The reviewer's comment, for the audit row."""
        if not self.has_comment or not self.is_valid():
            return ""
        return str(self.cleaned_data.get(self.COMMENT, "")).strip()

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        if self.errors:
            return cleaned
        answer: Any  # whatever JSON value the schema describes
        answered = {name: value for name, value in cleaned.items()
                    if not (self.has_comment and name == self.COMMENT)}
        if self.per_property:
            answer = {name: value for name, value in answered.items()
                      if value is not None and value != ""}
        else:
            answer = answered.get(self.ROOT)
        for name, value in list(cleaned.items()):  # add_error() drops the name from cleaned
            problem = jsontext.unstorable(value)
            if problem:
                self.add_error(name, _("It holds %(problem)s, which cannot be stored.")
                               % {"problem": problem})
        if self.errors:
            return cleaned
        try:
            self.answer = hitl.validate_question_answer(self.schema, answer)
        except InvalidAnswer as exc:
            self.add_error(None, exc.detail)
        return cleaned


def answer_form_for(pause: Pause, data: Any = None, reviewer: Any = None,
                    ) -> ApprovalForm | QuestionForm:
    """The form ``reviewer`` answers ``pause`` with, bound to ``data`` when given."""
    if pause.kind == PauseKind.APPROVAL:
        return ApprovalForm(pause, data=data, reviewer=reviewer)
    return QuestionForm(pause, data=data)


# --- bulk decisions ----------------------------------------------------------------

class BulkDecisionForm(forms.Form):
    """The confirmation of a bulk approve or reject: a reason (rejections) or a comment.

    A rejection's reason is the message each rejected action sends the agent; either
    way it is the comment of every ``Decision`` written.
    """

    reason = forms.CharField(required=False, max_length=2000, strip=True,
                             widget=forms.Textarea(attrs={"rows": 3}))

    def __init__(self, decision: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["reason"]
        if decision == "reject":
            field.label = _("Reason for rejecting")
            field.help_text = _("Sent to the agent with each rejection, and kept in the audit.")
        else:
            field.label = _("Comment")
            field.help_text = _("Kept in the audit with each approval; the agent does not see "
                                "it.")
