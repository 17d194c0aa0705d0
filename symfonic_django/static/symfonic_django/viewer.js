/* symfonic_django live-turn viewer: follows /ws/symfonic/runs/<id>/ with the admin session.
 *
 * Every event is rendered once, in seq order. When the socket drops it reconnects
 * with ?after=<last seq>, so the server replays exactly what was missed. A 4408
 * close (a connection carries a page of events at most, 2,000 or 512 KiB) reconnects
 * the same way at once. It stops only at the server's 1000 close after the turn's
 * terminal event, or at a 44xx refusal. (A close the page starts itself also reads
 * 1000 here: daphne answers a client's close frame with 1000, whatever code it
 * carried; so 1000 alone is not the end.) Text from events is only ever set as
 * textContent, never as HTML.
 *
 * A paused turn is not the end of the story. The socket closes after turn.paused,
 * so the page then asks the run's state URL (viewer.py) how its pauses stand: at
 * once, then every 0.2 s growing to 0.5 s while the tab is visible (10 s while it
 * is hidden, and at once when it is shown again), until they are resolved. Then
 * it follows the continuation's stream on the same page, below what it showed,
 * and puts the continuation's viewer URL in the address bar (history.replaceState),
 * so a reload lands on the run now streaming.
 *
 * Times are shown as the admin shows them: "2026-12-02 07:25:31 UTC", in the zone
 * the server names (config.timeZone).
 *
 * Its words come from Django's JavaScript catalog (viewer.py mounts it; the page loads
 * it first), through gettext / ngettext / interpolate; without it they stay English.
 */
(function () {
  "use strict";

  var gettext = window.gettext || function (text) { return text; };
  var ngettext = window.ngettext || function (one, many, n) { return n === 1 ? one : many; };
  var interpolate = window.interpolate || function (format, words) {
    return format.replace(/%\((\w+)\)s/g, function (_, name) { return String(words[name]); });
  };
  // A translated sentence with its named %(...)s words filled in.
  function says(format, words) { return interpolate(format, words, true); }

  var config = JSON.parse(document.getElementById("symfonic-viewer-config").textContent);
  var transcript = document.getElementById("symfonic-transcript");
  var statusBadge = document.getElementById("symfonic-status");
  var connection = document.getElementById("symfonic-connection");
  var outcome = document.getElementById("symfonic-outcome");
  var logBody = document.getElementById("symfonic-log");
  var logCount = document.getElementById("symfonic-log-count");
  var runIdCell = document.getElementById("symfonic-run-id");
  var runLink = document.getElementById("symfonic-run-link");
  var resumesRow = document.getElementById("symfonic-resumes");
  var started = document.getElementById("symfonic-started");
  var continuedRow = document.getElementById("symfonic-continued");

  var REFUSED = {
    4401: gettext("not signed in (4401)"),
    4403: gettext("you review no scopes (4403)"),
    4404: gettext("no such run in your scopes (4404)")
  };
  var TOO_FAR_BEHIND = 4408; // not a refusal: reconnect with ?after= and read on
  var FIRST_RETRY_MS = 500;
  var MAX_RETRY_MS = 10000;
  var FIRST_POLL_MS = 200;
  var VISIBLE_POLL_MS = 500; // the follow latency's bound, while someone looks
  var HIDDEN_POLL_MS = 10000;

  // The run the page follows now; it moves on to each continuation in turn.
  var current = {id: config.runId, streamPath: config.streamPath, stateUrl: config.stateUrl};
  var knownState = config.state; // where its pauses stood when the page was made
  var runs = 1; // runs followed on this page
  var events = 0; // events rendered, over every run followed

  var lastSeq = 0;
  var connects = 0;
  var ended = false; // a terminal event arrived
  var socket = null;
  var reconnectTimer = null;
  var retryMs = FIRST_RETRY_MS;
  var openMessage = null; // the message block deltas are appended to
  var tools = {}; // tool_call_id -> its card
  var pauseCards = {}; // pause id -> its card
  var waitingFor = null; // the pause ids of a turn.paused whose answers are awaited
  var pollTimer = null;
  var pollMs = FIRST_POLL_MS;
  var polls = 0;

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function pretty(value) {
    return typeof value === "string" ? value : JSON.stringify(value, null, 2);
  }

  // --- times, as the admin's symfonic_datetime filter shows them ---------------------

  var zone = zoneNamed(config.timeZone || "UTC");

  function pad(n) {
    return (n < 10 ? "0" : "") + n;
  }

  // The zone `name` as {name, clock}: clock(date) is {day: "YYYY-MM-DD", time: "HH:MM:SS"}.
  function zoneNamed(name) {
    // A fixed offset, as Django names one: "UTC+02:00".
    var fixed = /^UTC([+-])(\d\d):(\d\d)$/.exec(name);
    if (fixed) {
      var minutes = (fixed[1] === "-" ? -1 : 1) * (parseInt(fixed[2], 10) * 60 + parseInt(fixed[3], 10));
      return {name: name, clock: function (date) {
        var d = new Date(date.getTime() + minutes * 60000);
        return {day: d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate()),
                time: pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes()) + ":" + pad(d.getUTCSeconds())};
      }};
    }
    var format;
    try {
      format = new Intl.DateTimeFormat("en-US", {
        timeZone: name, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit",
        hour: "2-digit", minute: "2-digit", second: "2-digit"
      });
    } catch (error) { // a zone this browser does not know: show UTC, and say so
      return {name: "UTC", clock: zoneNamed("UTC+00:00").clock};
    }
    return {name: name, clock: function (date) {
      var p = {};
      format.formatToParts(date).forEach(function (part) { p[part.type] = part.value; });
      return {day: p.year + "-" + p.month + "-" + p.day, time: p.hour + ":" + p.minute + ":" + p.second};
    }};
  }

  function when(iso, withDate, inZone) {
    var date = new Date(iso);
    if (isNaN(date)) return String(iso);
    var z = inZone || zone;
    var clock = z.clock(date);
    return (withDate ? clock.day + " " : "") + clock.time + " " + z.name;
  }

  // --- the page -------------------------------------------------------------------------

  function setStatus(status, label) {
    statusBadge.className = "symfonic-status symfonic-status-" + status;
    statusBadge.textContent = label;
  }

  function setConnection(text, state) {
    connection.textContent = text;
    connection.className = "symfonic-connection symfonic-connection-" + (state || "quiet");
  }

  function add(node) {
    var empty = transcript.querySelector(".symfonic-empty");
    if (empty) empty.remove();
    transcript.appendChild(node);
    var nearBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 160;
    if (nearBottom) node.scrollIntoView({block: "end"});
    return node;
  }

  function note(text, className) {
    openMessage = null;
    return add(el("p", "symfonic-note " + (className || ""), text));
  }

  function link(href, text) {
    var a = el("a", "", text);
    a.href = href;
    return a;
  }

  function short(id) {
    return String(id).slice(0, 8);
  }

  function pauseLink(pauseId, text) {
    if (!config.pauseUrl) return el("code", "", short(pauseId));
    return link(config.pauseUrl.replace("{id}", pauseId), text || says(gettext("pause %(id)s"), {id: short(pauseId)}));
  }

  function jsonBlock(value) {
    return el("pre", "symfonic-json", pretty(value));
  }

  function showOutcome(paragraphs, output) {
    var body = outcome.querySelector(".symfonic-outcome-body");
    body.textContent = "";
    paragraphs.forEach(function (p) {
      body.appendChild(typeof p === "string" ? el("p", "", p) : p);
    });
    if (output !== null && output !== undefined) body.appendChild(jsonBlock(output));
    outcome.hidden = false;
  }

  // --- one renderer per event type ----------------------------------------------------

  function messageBlock() {
    if (!openMessage) openMessage = add(el("div", "symfonic-message-text", ""));
    return openMessage;
  }

  function toolCard(data) {
    var card = tools[data.tool_call_id];
    if (card) return card;
    card = add(el("div", "symfonic-tool"));
    var head = card.appendChild(el("div", "symfonic-tool-head"));
    head.appendChild(el("span", "symfonic-tool-icon", "⚙"));
    head.appendChild(el("strong", "symfonic-tool-name", data.name));
    card.state = head.appendChild(el("span", "symfonic-status symfonic-status-running", gettext("running")));
    card.appendChild(el("div", "symfonic-label", gettext("Arguments")));
    card.appendChild(jsonBlock(data.args || {}));
    tools[data.tool_call_id] = card;
    openMessage = null;
    return card;
  }

  function pausePrompt(card, kind, prompt) {
    var actions = prompt && prompt.action_requests;
    if (kind === "approval" && Array.isArray(actions)) {
      actions.forEach(function (action) {
        var block = card.appendChild(el("div", "symfonic-pause-action"));
        block.appendChild(el("strong", "symfonic-tool-name", action.name));
        if (action.description) block.appendChild(el("span", "symfonic-description", " — " + action.description));
        block.appendChild(jsonBlock(action.args || {}));
      });
      return;
    }
    var question = prompt && (prompt.question || prompt.text || prompt.message || prompt.description);
    if (typeof prompt === "string") question = prompt;
    if (typeof question === "string") card.appendChild(el("p", "symfonic-question", question));
    else card.appendChild(jsonBlock(prompt));
  }

  var render = {
    "turn.started": function (e) {
      setStatus("running", gettext("Running"));
      var line = note(says(gettext("Turn started (agent %(agent)s)"), {agent: e.data.agent}),
                      "symfonic-note-start");
      if (e.data.resumed_from_pause) {
        line.appendChild(document.createTextNode(gettext(", resumed by the answer to ")));
        line.appendChild(pauseLink(e.data.resumed_from_pause));
      }
    },
    "message.delta": function (e) {
      messageBlock().textContent += e.data.text;
    },
    "message.completed": function (e) {
      // Either the whole message its deltas streamed, or a message of its own.
      var block = messageBlock();
      var text = block.textContent;
      block.textContent = e.data.text.indexOf(text) === 0 ? e.data.text : text + e.data.text;
      openMessage = null;
    },
    "tool.started": function (e) {
      toolCard(e.data);
    },
    "tool.completed": function (e) {
      var card = toolCard(e.data);
      // An error in place of a result (a rejected call, a tool that raised) is not "done".
      var failed = e.data.status === "error";
      card.state.className = "symfonic-status symfonic-status-" + (failed ? "failed" : "completed");
      card.state.textContent = failed ? gettext("not done") : gettext("done");
      if (failed) card.state.title = gettext("The agent got an error instead of a result: the call was rejected, or the tool failed.");
      card.appendChild(el("div", "symfonic-label", gettext("Result")));
      card.appendChild(jsonBlock(e.data.result));
    },
    "pause.requested": function (e) {
      openMessage = null;
      var card = add(el("div", "symfonic-pause"));
      var head = card.appendChild(el("div", "symfonic-pause-head"));
      head.appendChild(el("strong", "", e.data.kind === "approval" ? gettext("Approval requested") : gettext("Question")));
      card.when = head.appendChild(el("span", "quiet", e.data.expires_at
        ? " · " + says(gettext("expires %(when)s"), {when: when(e.data.expires_at, true)}) : ""));
      pausePrompt(card, e.data.kind, e.data.prompt);
      if (config.pauseUrl) {
        card.answer = card.appendChild(pauseLink(e.data.pause_id, gettext("Answer it in the admin →")));
        card.answer.className = "button symfonic-answer";
      }
      pauseCards[e.data.pause_id] = card;
    },
    "turn.paused": function (e) {
      ended = true;
      openMessage = null;
      setStatus("paused", gettext("Paused"));
      waitingFor = e.data.pause_ids;
      if (!settleFrom(knownState)) {
        showWaiting(knownState);
        poll();
      }
    },
    "turn.completed": function (e) {
      ended = true;
      setStatus("completed", gettext("Completed"));
      showOutcome([gettext("The turn completed.")], e.data.output);
    },
    "turn.failed": function (e) {
      ended = true;
      setStatus("failed", gettext("Failed"));
      showOutcome([says(gettext("The turn failed: %(reason)s"),
                        {reason: e.data.code + (e.data.message ? " — " + e.data.message : "")})]);
    }
  };

  function log(e) {
    var row = logBody.appendChild(el("tr"));
    row.appendChild(el("td", "", runs > 1 ? short(current.id) + " #" + e.seq : e.seq));
    row.appendChild(el("td", "", e.type));
    row.appendChild(el("td", "", when(e.ts)));
    events += 1;
    logCount.textContent = String(events);
  }

  // --- a paused turn: waiting for its answers, then following the continuation ----------

  function pausesOf(state) {
    var byId = {};
    ((state && state.pauses) || []).forEach(function (p) { byId[p.id] = p; });
    return byId;
  }

  function showWaiting(state) {
    var n = waitingFor.length;
    var byId = pausesOf(state);
    var lines = [says(ngettext(
      "Waiting for %(n)s answer. Answering continues the turn in a new run; this page follows it.",
      "Waiting for %(n)s answers. Answering continues the turn in a new run; this page follows it.",
      n), {n: n})];
    waitingFor.forEach(function (id) {
      var p = el("p");
      var pause = byId[id];
      if (pause && pause.status !== "pending") {
        p.appendChild(document.createTextNode(answeredText(pause)));
      } else {
        p.appendChild(pauseLink(id, says(gettext("Answer pause %(id)s →"), {id: short(id)})));
        if (pause && pause.approvals) {
          p.appendChild(document.createTextNode(" (" + says(gettext("%(have)s of %(need)s approvals"),
            {have: pause.approvals.have, need: pause.approvals.need}) + ")"));
        }
      }
      lines.push(p);
    });
    showOutcome(lines);
  }

  function answeredText(pause) {
    var text = says(gettext("Pause %(id)s %(status)s"),
                    {id: short(pause.id), status: pause.status_label.toLowerCase()});
    if (pause.answered_by) text += " " + says(gettext("by %(who)s"), {who: pause.answered_by});
    if (pause.answered_via_label && pause.answered_via !== "system") {
      text += " " + says(gettext("via %(via)s"), {via: pause.answered_via_label});
    }
    if (pause.answered_at) text += " " + says(gettext("at %(when)s"), {when: when(pause.answered_at, true)});
    return text + ".";
  }

  // If every awaited pause is resolved in `state`, show so and follow on; else false.
  function settleFrom(state) {
    if (!state || !waitingFor || state.run.id !== current.id) return false;
    var byId = pausesOf(state);
    var open = waitingFor.filter(function (id) { return !byId[id] || byId[id].status === "pending"; });
    if (open.length) return false;
    stopPolling();
    var lines = waitingFor.map(function (id) {
      markAnswered(byId[id]);
      return answeredText(byId[id]);
    });
    waitingFor = null;
    var next = state.continuation;
    if (next) {
      lines.push(continuedLine(next));
      showOutcome(lines);
      follow(next, lines);
    } else {
      setStatus(state.run.status, state.run.status_label);
      lines.push(says(gettext("The turn does not continue: the run is %(status)s."),
                      {status: state.run.status_label.toLowerCase()}));
      showOutcome(lines);
    }
    return true;
  }

  function continuedLine(next) {
    var p = el("p", "symfonic-continued");
    p.appendChild(document.createTextNode(gettext("Continued in") + " "));
    p.appendChild(next.viewer_url ? link(next.viewer_url, says(gettext("run %(id)s"), {id: short(next.id)}))
                                  : el("code", "", short(next.id)));
    p.appendChild(document.createTextNode(gettext(", followed below.")));
    return p;
  }

  function markAnswered(pause) {
    var card = pauseCards[pause.id];
    if (!card) return;
    if (card.answer) card.answer.remove();
    card.classList.add("symfonic-pause-resolved");
    card.when.textContent = " · " + answeredText(pause);
  }

  function follow(next, lines) {
    // Past the paused run: the continuation's events go below, on the same page.
    var divider = add(el("div", "symfonic-divider"));
    lines.forEach(function (line) {
      divider.appendChild(typeof line === "string" ? el("p", "", line) : line.cloneNode(true));
    });
    if (socket) { var old = socket; socket = null; old.close(); }
    if (reconnectTimer !== null) window.clearTimeout(reconnectTimer);
    reconnectTimer = null;
    var previous = current;
    current = {id: next.id, streamPath: next.stream_path, stateUrl: next.state_url};
    knownState = null;
    runs += 1;
    lastSeq = 0;
    ended = false;
    retryMs = FIRST_RETRY_MS;
    openMessage = null;
    tools = {};
    runIdCell.textContent = next.id;
    if (runLink && config.runUrl) runLink.href = config.runUrl.replace("{id}", next.id);
    if (next.created_at) started.textContent = when(next.created_at, true);
    resumedFrom(previous.id, window.location.pathname, next.resumed_from_pause_id);
    if (continuedRow) continuedRow.hidden = true;
    setStatus(next.status, next.status_label);
    if (next.viewer_url) window.history.replaceState(null, "", next.viewer_url);
    connect();
  }

  // The facts' "Resumes" row, for a run that continues `runId` (its viewer at `href`).
  function resumedFrom(runId, href, pauseId) {
    var cell = resumesRow.querySelector("td");
    cell.textContent = "";
    cell.appendChild(link(href, says(gettext("run %(id)s"), {id: short(runId)})));
    cell.appendChild(document.createTextNode(gettext(", the run that paused")));
    if (pauseId) {
      cell.appendChild(document.createTextNode(" (" + gettext("answer to pause") + " "));
      cell.appendChild(el("code", "", short(pauseId)));
      cell.appendChild(document.createTextNode(")"));
    }
    resumesRow.hidden = false;
  }

  function stopPolling() {
    if (pollTimer !== null) window.clearTimeout(pollTimer);
    pollTimer = null;
  }

  function schedule(failed) {
    stopPolling();
    var cap = failed || document.hidden ? HIDDEN_POLL_MS : VISIBLE_POLL_MS;
    pollTimer = window.setTimeout(poll, pollMs);
    pollMs = Math.min(Math.round(pollMs * 1.5), cap);
  }

  function poll() {
    stopPolling();
    if (!waitingFor || !current.stateUrl) return;
    var asked = current.id;
    polls += 1;
    fetch(current.stateUrl, {credentials: "same-origin", cache: "no-store",
                             headers: {Accept: "application/json"}})
      .then(function (response) {
        if (response.status === 401 || response.status === 403 || response.status === 404) {
          stopPolling();
          setConnection(says(gettext("stopped following: the server says %(status)s"),
                             {status: response.status}), "refused");
          return null;
        }
        var json = (response.headers.get("Content-Type") || "").indexOf("application/json") === 0;
        if (!response.ok || !json) throw new Error("state " + response.status);
        return response.json();
      })
      .then(function (state) {
        if (!state || asked !== current.id || !waitingFor) return;
        pollMs = Math.min(pollMs, VISIBLE_POLL_MS);
        if (!settleFrom(state)) {
          showWaiting(state);
          schedule(false);
        }
      })
      .catch(function () {
        if (asked === current.id && waitingFor) schedule(true);
      });
  }

  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && pollTimer !== null) {
      pollMs = FIRST_POLL_MS;
      poll(); // shown again: ask now rather than at the end of a hidden tab's long wait
    }
  });

  // --- the socket -----------------------------------------------------------------------

  function connect() {
    reconnectTimer = null;
    var scheme = window.location.protocol === "https:" ? "wss:" : "ws:";
    var url = scheme + "//" + window.location.host + current.streamPath +
      (lastSeq ? "?after=" + lastSeq : "");
    setConnection(lastSeq ? gettext("reconnecting…") : gettext("connecting…"));
    var ws = new WebSocket(url);
    socket = ws;
    // A socket the page has moved on from (a run it no longer follows) is ignored.
    ws.onopen = function () {
      if (socket !== ws) return;
      connects += 1;
      setConnection(gettext("live"), "live");
    };
    ws.onmessage = function (message) {
      if (socket !== ws) return;
      var e = JSON.parse(message.data);
      if (e.seq <= lastSeq) return; // never render an event twice
      lastSeq = e.seq;
      retryMs = FIRST_RETRY_MS;
      (render[e.type] || function () {})(e);
      log(e);
    };
    ws.onclose = function (close) {
      if (socket !== ws) return;
      socket = null;
      if (close.code === 1000 && ended) {
        setConnection(waitingFor ? gettext("stream ended; waiting for the answer")
                                 : gettext("stream ended"), "ended");
      } else if (close.code === TOO_FAR_BEHIND) {
        setConnection(gettext("catching up…"));
        reconnectTimer = window.setTimeout(connect, 0);
      } else if (REFUSED[close.code]) {
        setConnection(says(gettext("refused: %(why)s"), {why: REFUSED[close.code]}), "refused");
      } else {
        setConnection(says(gettext("connection lost (%(code)s), reconnecting in %(seconds)s s…"),
                           {code: close.code, seconds: Math.round(retryMs / 100) / 10}), "lost");
        reconnectTimer = window.setTimeout(connect, retryMs);
        retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
      }
    };
  }

  // A handle for operators (and tests): where the viewer is, and a way to drop the socket.
  window.symfonicViewer = {
    get runId() { return current.id; },
    get runs() { return runs; },
    get lastSeq() { return lastSeq; },
    get connects() { return connects; },
    get polls() { return polls; },
    // An ISO time as this page shows it, in its zone or in the zone named.
    format: function (iso, zoneName) { return when(iso, true, zoneName ? zoneNamed(zoneName) : null); },
    drop: function () { if (socket) socket.close(4000, "dropped by the page"); }
  };

  connect();
})();
