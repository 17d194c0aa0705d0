"""What an AG-UI request asks: the checked ``RunAgentInput``, the agent's input, the
interrupts it resumes, and where a reconnecting client's stream resumes.

Everything here is read before anything is written: a request that cannot be
read is refused with ``invalid_request`` (a ``RUN_ERROR``), and changes nothing.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

from ag_ui.core import RunAgentInput, UserMessage
from pydantic import ValidationError

from ... import jsontext
from ...conf import settings
from ...exceptions import InvalidRequest, NotFound

#: A thread id is the run's ``thread_id`` column: 1 to 200 characters.
MAX_THREAD_ID = 200
#: How a client names the last stored event it saw: ``<app run id>:<seq>``.
AFTER = re.compile(r"(?P<run>[0-9a-fA-F-]{36}):(?P<seq>[0-9]{1,10})")
#: An interrupt id: ``<pause id>:<index of the action request>``.
INTERRUPT_ID = re.compile(r"(?P<pause>[0-9a-fA-F-]{36}):(?P<index>[0-9]{1,3})")


def read_input(data: Any) -> RunAgentInput:
    """The request body as ag-ui's own ``RunAgentInput``, or ``invalid_request`` saying why."""
    if not isinstance(data, dict):
        raise InvalidRequest("The request body must be a RunAgentInput JSON object.")
    try:
        given = RunAgentInput.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}"
                             for e in exc.errors()[:5])
        raise InvalidRequest(f"The request body is not a RunAgentInput: {problems}.") from None
    if not 0 < len(given.thread_id) <= MAX_THREAD_ID or "\x00" in given.thread_id:
        raise InvalidRequest(f"threadId must be 1 to {MAX_THREAD_ID} characters, without NUL.")
    if not given.run_id or len(given.run_id) > MAX_THREAD_ID:
        raise InvalidRequest(f"runId must be 1 to {MAX_THREAD_ID} characters.")
    return given


def agent_input(given: RunAgentInput) -> Any:
    """The input of the agent's run: ``forwardedProps.input`` when the client sends one,
    else a non-empty ``state``, else the last user message (its JSON when it is JSON,
    else its text). The agent's ``input_schema`` judges it (``runs.start_run``)."""
    props = given.forwarded_props
    if isinstance(props, dict) and "input" in props:
        return props["input"]
    if given.state not in (None, {}, []):
        return given.state
    for message in reversed(given.messages):
        if isinstance(message, UserMessage) and isinstance(message.content, str):
            return message_input(message.content)
    raise InvalidRequest("The request gives the agent no input: send forwardedProps.input, "
                         "a state, or a user message.")


def message_input(text: str) -> Any:
    """A user message as the agent's input: its JSON, read as every JSON surface of the
    app reads it (``jsontext.loads``: bounded depth, no NaN, no number a float does not
    spell, no key twice), or its text when it is not JSON. Text that starts as JSON and
    is refused is refused (``invalid_request``), not passed on as text."""
    try:
        return jsontext.loads(text, max_depth=settings.MAX_JSON_DEPTH)
    except jsontext.TooDeep:
        raise InvalidRequest("The user message nests JSON deeper than "
                             f"{settings.MAX_JSON_DEPTH} levels.") from None
    except ValueError as refused:
        if text.lstrip().startswith(("{", "[")):
            raise InvalidRequest(f"The user message is JSON the app does not read: {refused}"
                                 ) from None
        return text


@dataclass(frozen=True)
class After:
    """The last stored event a reconnecting client saw: the app's run, and its ``seq``."""

    run_id: uuid.UUID
    seq: int


def read_after(given: RunAgentInput, last_event_id: str | None) -> After | None:
    """Where a reconnecting client's stream resumes: ``forwardedProps.after`` or the
    ``Last-Event-ID`` header, ``<app run id>:<seq>`` as the stream's ``id:`` lines say."""
    props = given.forwarded_props
    raw = props.get("after") if isinstance(props, dict) else None
    raw = raw if raw is not None else last_event_id
    if raw is None or raw == "":
        return None
    match = AFTER.fullmatch(raw) if isinstance(raw, str) else None
    if match is None:
        raise InvalidRequest("after (or Last-Event-ID) must be '<run id>:<seq>', as the "
                             "stream's id: lines give it.")
    try:
        run_id = uuid.UUID(match["run"])
    except ValueError:
        raise InvalidRequest("after names no run id.") from None
    return After(run_id, int(match["seq"]))


def interrupt_key(interrupt_id: str) -> tuple[uuid.UUID, int]:
    """``(pause id, action index)`` of an interrupt id; ``not_found`` for one this app
    never issued (the same refusal as an unknown pause: nothing is told about ids)."""
    match = INTERRUPT_ID.fullmatch(interrupt_id)
    if match is None:
        raise NotFound("No such interrupt.")
    try:
        return uuid.UUID(match["pause"]), int(match["index"])
    except ValueError:
        raise NotFound("No such interrupt.") from None
