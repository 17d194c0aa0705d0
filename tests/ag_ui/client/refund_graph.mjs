// The real @ag-ui/client HttpAgent (its event verification is always on) against a live
// symfonic_django: refund_graph started, its interrupt resumed with one approve, one edit
// and one reject, run to success. Prints what it saw as one JSON line; exits 1 on any error.
// Run by tests/ag_ui/test_node_client.py: node refund_graph.mjs <origin> <DRF token>.
import { HttpAgent } from "@ag-ui/client";

const [origin, token] = process.argv.slice(2);
const agent = new HttpAgent({
  url: `${origin}/api/symfonic/ag-ui/refund_graph/`,
  headers: { Authorization: `Token ${token}` },
  threadId: `node-${process.pid}-${Date.now()}`,
});
const seen = { types: [], errors: [] };
agent.subscribe({
  onEvent: ({ event }) => { seen.types.push(event.type); },
  onRunErrorEvent: ({ event }) => { seen.errors.push(event); },
});

const refunds = [
  { order_id: "NODE-1", amount: 10 },
  { order_id: "NODE-2", amount: 20 },
  { order_id: "NODE-3", amount: 30 },
];
await agent.runAgent({ forwardedProps: { input: { refunds } } });
const interrupts = agent.pendingInterrupts;
if (interrupts.length !== 3) throw new Error(`expected 3 interrupts, got ${JSON.stringify(interrupts)}; saw ${JSON.stringify(seen)}`);
const payloads = [
  { approved: true },
  { approved: true, editedArgs: { order_id: "NODE-2", amount: 2 } },
  { approved: false, message: "Not this one." },
];
const resumed = await agent.runAgent({
  resume: interrupts.map((interrupt, i) => ({
    interruptId: interrupt.id, status: "resolved", payload: payloads[i],
  })),
});
console.log(JSON.stringify({
  threadId: agent.threadId,
  interrupts,
  result: resumed.result,
  pendingAfter: agent.pendingInterrupts,
  messages: agent.messages,
  ...seen,
}));
