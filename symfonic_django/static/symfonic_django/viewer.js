/* symfonic_django live-turn viewer: follows /ws/symfonic/runs/<id>/ with the admin session.
 *
 * Every event is rendered once, in seq order. When the socket drops it reconnects
 * with ?after=<last seq>, so the server replays exactly what was missed. It stops
 * only at the server's 1000 close after the turn's terminal event, or at a 44xx
 * refusal. (A close the page starts itself also reads 1000 here: daphne answers a
 * client's close frame with 1000, whatever code it carried; so 1000 alone is not
 * the end.) Text from events is only ever set as textContent, never as HTML.
 */
(function () {
  "use strict";

  var config = JSON.parse(document.getElementById("symfonic-viewer-config").textContent);
  var transcript = document.getElementById("symfonic-transcript");
  var statusBadge = document.getElementById("symfonic-status");
  var connection = document.getElementById("symfonic-connection");
  var outcome = document.getElementById("symfonic-outcome");
  var logBody = document.getElementById("symfonic-log");
  var logCount = document.getElementById("symfonic-log-count");

  var REFUSED = {
    4401: "not signed in (4401)",
    4403: "you review no scopes (4403)",
    4404: "no such run in your scopes (4404)"
  };
  var FIRST_RETRY_MS = 500;
  var MAX_RETRY_MS = 10000;

  var lastSeq = 0;
  var connects = 0;
  var ended = false; // a terminal event arrived
  var socket = null;
  var retryMs = FIRST_RETRY_MS;
  var openMessage = null; // the message block deltas are appended to
  var tools = {}; // tool_call_id -> its card

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function pretty(value) {
    return typeof value === "string" ? value : JSON.stringify(value, null, 2);
  }

  function when(iso, withDate) {
    var date = new Date(iso);
    if (isNaN(date)) return String(iso);
    return withDate ? date.toLocaleString() : date.toLocaleTimeString();
  }

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

  function pauseLink(pauseId, text) {
    if (!config.pauseUrl) return el("code", "", pauseId.slice(0, 8));
    return link(config.pauseUrl.replace("{id}", pauseId), text || "pause " + pauseId.slice(0, 8));
  }

  function jsonBlock(value) {
    return el("pre", "symfonic-json", pretty(value));
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
    card.state = head.appendChild(el("span", "symfonic-status symfonic-status-running", "running"));
    card.appendChild(el("div", "symfonic-label", "Arguments"));
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
      setStatus("running", "Running");
      var line = note("Turn started (agent " + e.data.agent + ")", "symfonic-note-start");
      if (e.data.resumed_from_pause) {
        line.appendChild(document.createTextNode(", resumed by the answer to "));
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
      card.state.className = "symfonic-status symfonic-status-completed";
      card.state.textContent = "done";
      card.appendChild(el("div", "symfonic-label", "Result"));
      card.appendChild(jsonBlock(e.data.result));
    },
    "pause.requested": function (e) {
      openMessage = null;
      var card = add(el("div", "symfonic-pause"));
      var head = card.appendChild(el("div", "symfonic-pause-head"));
      head.appendChild(el("strong", "", e.data.kind === "approval" ? "Approval requested" : "Question"));
      if (e.data.expires_at) head.appendChild(el("span", "quiet", " · expires " + when(e.data.expires_at, true)));
      pausePrompt(card, e.data.kind, e.data.prompt);
      if (config.pauseUrl) {
        var answer = card.appendChild(pauseLink(e.data.pause_id, "Answer it in the admin →"));
        answer.className = "button symfonic-answer";
      }
    },
    "turn.paused": function (e) {
      var n = e.data.pause_ids.length;
      setStatus("paused", "Paused");
      finish("Waiting for " + n + (n === 1 ? " answer" : " answers") + ". Answering continues the turn in a new run.",
             null, e.data.pause_ids);
    },
    "turn.completed": function (e) {
      setStatus("completed", "Completed");
      finish("The turn completed.", e.data.output);
    },
    "turn.failed": function (e) {
      setStatus("failed", "Failed");
      finish("The turn failed: " + e.data.code + (e.data.message ? " — " + e.data.message : ""), null);
    }
  };

  function finish(text, output, pauseIds) {
    ended = true;
    openMessage = null;
    var body = outcome.querySelector(".symfonic-outcome-body");
    body.textContent = "";
    body.appendChild(el("p", "", text));
    (pauseIds || []).forEach(function (id) {
      var p = body.appendChild(el("p"));
      p.appendChild(pauseLink(id, "Answer pause " + id.slice(0, 8) + " →"));
    });
    if (output !== null && output !== undefined) body.appendChild(jsonBlock(output));
    outcome.hidden = false;
  }

  function log(e) {
    var row = logBody.appendChild(el("tr"));
    row.appendChild(el("td", "", e.seq));
    row.appendChild(el("td", "", e.type));
    row.appendChild(el("td", "", when(e.ts)));
    logCount.textContent = String(e.seq);
  }

  // --- the socket -----------------------------------------------------------------------

  function connect() {
    var scheme = window.location.protocol === "https:" ? "wss:" : "ws:";
    var url = scheme + "//" + window.location.host + config.streamPath +
      (lastSeq ? "?after=" + lastSeq : "");
    setConnection(lastSeq ? "reconnecting…" : "connecting…");
    socket = new WebSocket(url);
    socket.onopen = function () {
      connects += 1;
      setConnection("live", "live");
    };
    socket.onmessage = function (message) {
      var e = JSON.parse(message.data);
      if (e.seq <= lastSeq) return; // never render an event twice
      lastSeq = e.seq;
      retryMs = FIRST_RETRY_MS;
      (render[e.type] || function () {})(e);
      log(e);
    };
    socket.onclose = function (close) {
      socket = null;
      if (close.code === 1000 && ended) {
        setConnection("stream ended", "ended");
      } else if (REFUSED[close.code]) {
        setConnection("refused: " + REFUSED[close.code], "refused");
      } else {
        setConnection("connection lost (" + close.code + "), reconnecting in " +
                      Math.round(retryMs / 100) / 10 + " s…", "lost");
        window.setTimeout(connect, retryMs);
        retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
      }
    };
  }

  // A handle for operators (and tests): where the viewer is, and a way to drop the socket.
  window.symfonicViewer = {
    get lastSeq() { return lastSeq; },
    get connects() { return connects; },
    drop: function () { if (socket) socket.close(4000, "dropped by the page"); }
  };

  connect();
})();
