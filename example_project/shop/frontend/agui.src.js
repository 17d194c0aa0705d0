// The example's AG-UI page: start a refund, review its interrupts as cards (approve, edit,
// reject), resume, show the result. Everything goes through @ag-ui/client's HttpAgent and
// the app's endpoint, POST /api/symfonic/ag-ui/<agent>/, with the reviewer's session and
// CSRF token. Bundled by esbuild into ../static/shop/agui.js (package.json, "build").
import { HttpAgent } from "@ag-ui/client";

const page = document.getElementById("agui");
const csrf = page.dataset.csrf;
const api = page.dataset.api;
const form = document.getElementById("agui-start");
const cards = document.getElementById("agui-cards");
const result = document.getElementById("agui-result");
const status = document.getElementById("agui-status");
let agent = null;

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function say(text, failed) {
  status.textContent = text;
  status.className = failed ? "agui-status agui-failed" : "agui-status";
}

function newAgent(name) {
  const made = new HttpAgent({
    url: `${api}ag-ui/${name}/`,
    headers: { "X-CSRFToken": csrf },
    threadId: `page-${Date.now()}-${Math.random().toString(16).slice(2)}`,
  });
  made.subscribe({
    onRunErrorEvent: ({ event }) => say(`Refused: ${event.code}: ${event.message}`, true),
  });
  return made;
}

function refundsFromForm() {
  const rows = [...form.querySelectorAll(".agui-refund")];
  return rows
    .map((row) => ({
      order_id: row.querySelector("[name=order_id]").value.trim(),
      amount: Number(row.querySelector("[name=amount]").value),
    }))
    .filter((refund) => refund.order_id);
}

function card(interrupt) {
  const action = interrupt.metadata?.symfonic?.action ?? { args: {} };
  const box = el("section", "agui-card");
  box.dataset.interrupt = interrupt.id;
  box.appendChild(el("h3", "", interrupt.message || interrupt.id));
  box.appendChild(el("pre", "agui-args", JSON.stringify(action.args, null, 2)));
  const editable = Boolean(interrupt.responseSchema?.properties?.editedArgs);
  const amount = el("input", "agui-edit-amount");
  amount.type = "number";
  amount.step = "0.01";
  amount.value = action.args.amount ?? "";
  amount.hidden = true;
  const note = el("input", "agui-note");
  note.placeholder = "Why (for a rejection)";
  note.hidden = true;
  const choices = el("div", "agui-choices");
  for (const [choice, label] of [["approve", "Approve"], ["edit", "Edit"], ["reject", "Reject"]]) {
    if (choice === "edit" && !editable) continue;
    const button = el("button", `agui-${choice}`, label);
    button.type = "button";
    button.addEventListener("click", () => {
      box.dataset.choice = choice;
      amount.hidden = choice !== "edit";
      note.hidden = choice !== "reject";
      choices.querySelectorAll("button").forEach((b) => b.classList.toggle("agui-chosen", b === button));
      send.disabled = [...cards.querySelectorAll(".agui-card")].some((c) => !c.dataset.choice);
    });
    choices.appendChild(button);
  }
  box.append(choices, amount, note);
  box.payload = () => {
    if (box.dataset.choice === "approve") return { approved: true };
    if (box.dataset.choice === "edit") {
      return { approved: true, editedArgs: { ...action.args, amount: Number(amount.value) } };
    }
    return note.value ? { approved: false, message: note.value } : { approved: false };
  };
  return box;
}

const send = el("button", "agui-send", "Send decisions");
send.type = "button";
send.disabled = true;
send.addEventListener("click", async () => {
  const resume = [...cards.querySelectorAll(".agui-card")].map((box) => ({
    interruptId: box.dataset.interrupt, status: "resolved", payload: box.payload(),
  }));
  send.disabled = true;
  say("Resuming…");
  const done = await agent.runAgent({ resume });
  cards.replaceChildren();
  showResult(done);
});

function showResult(done) {
  result.replaceChildren();
  const said = agent.messages.filter((m) => m.role === "assistant" && m.content).map((m) => m.content);
  result.appendChild(el("h2", "", "Result"));
  result.appendChild(el("p", "agui-said", said[said.length - 1] ?? ""));
  const tools = agent.messages.filter((m) => m.role === "tool");
  const list = el("ul", "agui-tool-results");
  for (const message of tools) list.appendChild(el("li", "", message.content));
  result.appendChild(list);
  result.appendChild(el("pre", "agui-output", JSON.stringify(done.result, null, 2)));
  say("Done.");
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const name = form.querySelector("[name=agent]").value;
  const refunds = refundsFromForm();
  const input = name === "refund_graph" ? { refunds } : refunds[0];
  agent = newAgent(name);
  cards.replaceChildren();
  result.replaceChildren();
  say("Running…");
  await agent.runAgent({ forwardedProps: { input } });
  const interrupts = agent.pendingInterrupts;
  if (!interrupts.length) return;
  say(`${interrupts.length} decision(s) needed.`);
  for (const interrupt of interrupts) cards.appendChild(card(interrupt));
  cards.appendChild(send);
  send.disabled = true;
});
