"""Request and response shapes of the HTTP API (docs/design.md section 6, pinned)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from .. import pauses
from ..models import Pause, PauseKind, Run


class PauseSerializer(serializers.ModelSerializer[Pause]):
    """A pause: the pinned keys of docs/design.md section 6, and ``scope``.

    ``scope`` is the pause's scope key (its tenant), shown to reviewers of that
    scope. A view serializing a pause for a caller who may not review its scope
    (a token holder on ``resume/``) passes ``context={"show_scope": False}``,
    and ``scope`` is null.
    """

    run_id = serializers.UUIDField(read_only=True)
    root_run_id = serializers.UUIDField(read_only=True)
    answered_by = serializers.SerializerMethodField()
    continuation_run_id = serializers.UUIDField(source="continuation_id", read_only=True,
                                                allow_null=True)
    prompt = serializers.JSONField()
    answer_schema = serializers.JSONField(allow_null=True)
    answer = serializers.JSONField(allow_null=True)
    scope = serializers.SerializerMethodField(
        help_text="The pause's scope key (its tenant); null for a caller who may not review it.")
    offered_decisions = serializers.SerializerMethodField(
        help_text="For an approval, the decisions an answer may give on each action request, "
                  "in order: its allowed_decisions, without edit on a pause that needs several "
                  "approvers (they approve the proposal). Null for a question.")

    class Meta:
        model = Pause
        fields = ["id", "kind", "status", "prompt", "answer_schema", "run_id", "root_run_id",
                  "session_id", "thread_id", "created_at", "expires_at", "answered_at",
                  "answered_by", "answer", "continuation_run_id", "scope", "offered_decisions"]
        read_only_fields = fields

    def get_answered_by(self, pause: Pause) -> str | None:
        reviewer = pause.answered_by
        return None if reviewer is None else reviewer.get_username()

    def get_scope(self, pause: Pause) -> str | None:
        return pause.scope_key if self.context.get("show_scope", True) else None

    @extend_schema_field(serializers.ListField(
        child=serializers.ListField(child=serializers.CharField()), allow_null=True))
    def get_offered_decisions(self, pause: Pause) -> list[list[str]] | None:
        if pause.kind != PauseKind.APPROVAL:
            return None
        return [pauses.offered_decisions(pause, request["name"])
                for request in pause.prompt["action_requests"]]


class RunSerializer(serializers.ModelSerializer[Run]):
    root_run_id = serializers.CharField(read_only=True)
    parent_run_id = serializers.UUIDField(source="parent_id", read_only=True, allow_null=True)
    resumed_from_pause_id = serializers.UUIDField(source="resumed_from_id", read_only=True,
                                                  allow_null=True)
    input = serializers.JSONField()
    output = serializers.JSONField(allow_null=True)
    error = serializers.JSONField(allow_null=True)

    class Meta:
        model = Run
        fields = ["id", "agent", "status", "root_run_id", "parent_run_id",
                  "resumed_from_pause_id", "session_id", "thread_id", "input", "output",
                  "error", "attempts", "created_at", "started_at", "finished_at"]
        read_only_fields = fields


class AnswerRequestSerializer(serializers.Serializer[Any]):
    answer = serializers.JSONField(help_text="A HITLResponse for approvals; a value fitting "
                                             "answer_schema for questions.")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "answer" not in self.initial_data:
            raise serializers.ValidationError({"answer": "This field is required."})
        return attrs


class StrictCharField(serializers.CharField):
    """Text that must arrive as a JSON string: DRF's ``CharField`` turns ``0`` into "0"."""

    default_error_messages = {"not_a_string": "Must be a string."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("not_a_string")
        return super().to_internal_value(data)


def comment_field() -> StrictCharField:
    return StrictCharField(required=False, allow_blank=True, max_length=2000,
                           help_text="A note for the record, as a JSON string.")


class ApproveRequestSerializer(serializers.Serializer[Any]):
    comment = comment_field()
    edited_args = serializers.DictField(required=False, help_text="Only for a one-action pause.")


class RejectRequestSerializer(serializers.Serializer[Any]):
    comment = comment_field()


class ClaimSerializer(serializers.Serializer[Any]):
    """A pause's review claim as it now is: who holds it and until when (null: nobody)."""

    pause_id = serializers.UUIDField()
    claimed_by = serializers.CharField(allow_null=True)
    claimed_until = serializers.DateTimeField(allow_null=True)


class ResumeRequestSerializer(serializers.Serializer[Any]):
    token = serializers.CharField(max_length=4096)
    answer = serializers.JSONField()


class RunCreateRequestSerializer(serializers.Serializer[Any]):
    agent = serializers.CharField(max_length=100)
    input = serializers.JSONField()
    session_id = serializers.CharField(required=False, allow_blank=True, max_length=200)
    thread_id = serializers.CharField(required=False, allow_blank=True, max_length=200)


class StreamSerializer(serializers.Serializer[Any]):
    path = serializers.CharField()
    ticket = serializers.CharField()


class AcceptedSerializer(serializers.Serializer[Any]):
    pause = PauseSerializer(allow_null=True)
    run_id = serializers.UUIDField(allow_null=True)
    stream = StreamSerializer(allow_null=True)


class EventSerializer(serializers.Serializer[Any]):
    seq = serializers.IntegerField()
    type = serializers.CharField()
    run_id = serializers.UUIDField()
    root_run_id = serializers.UUIDField()
    ts = serializers.CharField()
    # DRF's serializer metaclass takes declared fields off the class, so this field does not
    # replace ``Serializer.data``; the stubs cannot express that.
    data = serializers.JSONField()  # type: ignore[assignment]


class EventPageSerializer(serializers.Serializer[Any]):
    results = EventSerializer(many=True)


class ErrorSerializer(serializers.Serializer[Any]):
    code = serializers.CharField()
    detail = serializers.CharField()
