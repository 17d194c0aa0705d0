// The pause page: show each action's arguments editor only for "Edit & approve"
// and its message only for "Reject" / "Respond". Without JavaScript every field
// stays visible and the form works the same.
"use strict";
(function () {
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
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll(".symfonic-action").forEach(function (fieldset) {
      if (!fieldset.querySelector("input.symfonic-decision")) return;
      fieldset.addEventListener("change", function () { sync(fieldset); });
      sync(fieldset);
    });
  });
})();
