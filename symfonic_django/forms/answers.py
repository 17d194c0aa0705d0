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

from typing import Any

from django import forms
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from .. import hitl, jsontext, pauses
from ..exceptions import InvalidAnswer
from ..models import Pause, PauseKind
from .arg_inputs import ArgInput, arg_fields, args_from_inputs, input_problems
from .json_input import parse_json, pretty_json
from .schema_fields import field_for, main_type

#: The label of each decision, marked for translation: shown through ``decision_label``.
DECISION_LABELS = {
    "approve": gettext_noop("Approve"),
    "edit": gettext_noop("Edit & approve"),
    "reject": gettext_noop("Reject"),
    "respond": gettext_noop("Respond"),
}

#: The longest comment a reviewer may leave with a decision.
COMMENT_CHARS = 2000


def decision_label(decision: str) -> str:
    """The label of ``decision`` in the active language (the decision itself if unknown)."""
    return _(DECISION_LABELS[decision]) if decision in DECISION_LABELS else decision


def _comment_input(help_text: str) -> forms.CharField:
    """The reviewer's comment, kept in the audit with their answer."""
    return forms.CharField(label=_("Comment"), required=False, max_length=COMMENT_CHARS,
                           widget=forms.Textarea(attrs={"rows": 2}), help_text=help_text)


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
            self._add_action_fields(i, request)
        self.fields["comment"] = _comment_input(
            _("Kept in the audit with your decision, whichever it is; "
              "the agent does not see it."))

    def _add_action_fields(self, i: int, request: dict[str, Any]) -> None:
        """The fields of action ``i``: its decision, its arguments if it may be edited,
        a message if it may be rejected or responded to."""
        name = request["name"]
        allowed = self.allowed(i)
        self.fields[f"decision_{i}"] = self._decision_field(name, allowed)
        if "edit" in allowed:
            self._add_args_fields(i, request)
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

    def _decision_field(self, name: str, allowed: list[str]) -> forms.ChoiceField:
        errors = {"required": _("Choose a decision for %(name)s.") % {"name": name}}
        if "approve" in pauses.offered_decisions(self.pause, name) and "approve" not in allowed:
            # Not offered to this reviewer alone: their approval already counts (a page
            # opened before it did still shows the choice).
            errors["invalid_choice"] = _("You already approved this pause: it waits for "
                                         "other reviewers. You may still reject it.")
        return forms.ChoiceField(
            label=_("Decision on %(name)s") % {"name": name},
            choices=[(d, decision_label(d)) for d in allowed],
            widget=forms.RadioSelect(attrs={"class": "symfonic-decision"}),
            error_messages=errors,
        )

    def _add_args_fields(self, i: int, request: dict[str, Any]) -> None:
        """Action ``i``'s per-argument inputs (when its schema allows), then its JSON editor."""
        name = request["name"]
        schema = hitl.review_config(self.pause.prompt, name).get("args_schema")
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
        problems = input_problems(schema, inputs, args)
        for name, problem in problems:
            self.add_error(name, problem)
        return bool(problems)

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


# --- questions -----------------------------------------------------------------

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
        found = schema.get("properties") if main_type(schema) in ("object", None) else None
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
            self.fields[self.COMMENT] = _comment_input(
                _("Kept in the audit with your answer; the agent does not see it."))

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
