"""``POST ag-ui/{agent}/``: the AG-UI protocol (1.0) over the app's runs, pauses and events.

AG-UI's interrupt-aware run lifecycle is this app's pause: a run ends with
``RUN_FINISHED {outcome: {type: "interrupt", interrupts}}``, one interrupt per
action request of each pause (``<pause id>:<index>``), and the client's next
run on the thread carries ``resume`` entries, which are the app's answers,
given through the same ``pauses.answer_pause`` a reviewer's ``pauses/{id}/answer/``
uses, judged the same way. The stream is the stored ``TurnEvent`` rows of the
turn, mapped to AG-UI events and encoded by ``ag_ui.encoder.EventEncoder``.

The modules, by concern: ``wire`` (encoding, ``RUN_ERROR`` from a refusal),
``inputs`` (the request: which agent input, which interrupts, where to resume
a stream), ``interrupts`` (a pause as interrupts), ``mapping`` (a stored event
as AG-UI events), ``resume`` (resume entries as answers), ``stream`` (following
a turn in the database) and ``view`` (the endpoint). ``docs/ag-ui.md`` has the
mapping table and what the endpoint refuses.
"""

from .view import AgUiView

__all__ = ["AgUiView"]
