// The pause page: show each action's arguments editor only for "Edit & approve"
// and its message only for "Reject" / "Respond"; mark the line saying what the
// chosen decision will do; beside each argument input, show its change against
// the proposal ("99.99 → 50"). Without JavaScript every field stays visible and
// the form works the same (the page after the decision shows the changes too).
// Its words come from Django's JavaScript catalog when the page loads it.
"use strict";
(function () {
  var gettext = window.gettext || function (text) { return text; };

  function sync(fieldset) {
    const checked = fieldset.querySelector("input.symfonic-decision:checked");
    const choice = checked ? checked.value : "";
    const editor = fieldset.querySelector(".symfonic-args-editor");
    const message = fieldset.querySelector(".symfonic-message");
    const hasErrors = (el) => el && el.classList.contains("errors");
    if (editor) editor.classList.toggle("symfonic-hidden", choice !== "edit" && !hasErrors(editor));
    if (message) {
      message.classList.toggle("symfonic-hidden",
        choice !== "reject" && choice !== "respond" && !hasErrors(message));
    }
    fieldset.querySelectorAll(".symfonic-outcomes li").forEach(function (line) {
      line.classList.toggle("symfonic-chosen", line.dataset.decision === choice);
    });
  }

  // A value as the page shows it: a string bare, anything else as JSON.
  function shown(value) {
    return typeof value === "string" ? value : JSON.stringify(value);
  }

  function current(input) {
    if (input.type === "checkbox") return shown(input.checked);
    if (input.tagName === "SELECT") {
      if (input.value === "") return gettext("(none)");
      try { return shown(JSON.parse(input.value)); } catch (e) { return input.value; }
    }
    if (input.value === "") return gettext("(none)");
    if (input.type === "number") {
      const number = Number(input.value);
      return Number.isFinite(number) ? String(number) : input.value;
    }
    return input.value;
  }

  function showChange(row) {
    const input = row.querySelector("input, select, textarea");
    const change = row.querySelector(".symfonic-change");
    if (!input || !change) return;
    const was = row.dataset.proposed;
    const now = current(input);
    change.textContent = now === was ? "" : was + " \u2192 " + now;
    row.classList.toggle("symfonic-changed", now !== was);
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll(".symfonic-action").forEach(function (fieldset) {
      if (!fieldset.querySelector("input.symfonic-decision")) return;
      fieldset.addEventListener("change", function () { sync(fieldset); });
      sync(fieldset);
    });
    document.querySelectorAll(".symfonic-arg-input").forEach(function (row) {
      row.addEventListener("input", function () { showChange(row); });
      row.addEventListener("change", function () { showChange(row); });
      showChange(row);
    });
  });
})();
