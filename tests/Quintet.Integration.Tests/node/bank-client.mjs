// A Node.js client of the BankAccount sample through the local proxy, with nothing but @grpc/grpc-js, @grpc/proto-loader
// and the .proto that `quintet proto export` writes. ProxyTests runs it:
//
//   node bank-client.mjs <account.proto> <proxy host:port> <account key> <seconds before it gives up>
//
// It subscribes to the account's events, then deposits one call at a time, numbering its deposits 1, 2, 3, ... until a
// line "stop" (or the end of its input), then reads the balance, waits for the event of the last update, and exits 0.
// Each deposit's outcome, each event and the final balance go to stdout as one JSON object a line, for the test to
// check: it knows nothing of Quintet's headers but quintet-key; the proxy routes, fails over and numbers its calls.
import { createInterface } from "node:readline";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

const [protoFile, target, key, boundSeconds] = process.argv.slice(2);
if (!protoFile || !target || !key || !(Number(boundSeconds) > 0)) {
  console.error("usage: node bank-client.mjs <account.proto> <proxy host:port> <account key> <seconds before it gives up>");
  process.exit(2);
}

// A bound of its own besides the test's kill: a client that hangs says where it was.
let phase = "starting";
setTimeout(() => {
  console.error(`gave up after ${boundSeconds} s while ${phase}`);
  process.exit(3);
}, Number(boundSeconds) * 1000).unref();

const print = (line) => process.stdout.write(JSON.stringify(line) + "\n");

// keepCase: the exported messages' field names as they are; longs as numbers (the sums here stay far below 2^53).
const definition = protoLoader.loadSync(protoFile, { keepCase: true, longs: Number, defaults: true });
const Account = grpc.loadPackageDefinition(definition).samples.bank.Account;
const client = new Account(target, grpc.credentials.createInsecure());

const keyed = () => {
  const metadata = new grpc.Metadata();
  metadata.set("quintet-key", key);
  return metadata;
};
const deadline = () => Date.now() + 60_000;
const unary = (method, request) =>
  new Promise((resolve, reject) => client[method](request, keyed(), { deadline: deadline() }, (error, reply) => (error ? reject(error) : resolve(reply))));

// The subscription: one call for the whole run. The proxy resumes it after the last event it passed on when the
// owner's manager fails, so this stream is expected to neither end nor fail before the client cancels it.
let lastUpdate = 0;
let finished = false;
let streamOpen = true;
let eventWaiter = null;
const events = client.Events({}, keyed());
events.on("data", (event) => {
  lastUpdate = Math.max(lastUpdate, event.Update);
  print({ kind: "event", position: event.quintet_position, update: event.Update, change: event.Change, balance: event.Balance, manager: event.Manager });
  eventWaiter?.();
});
events.on("error", (error) => {
  streamOpen = false;
  if (!finished) {
    print({ kind: "stream-error", code: grpc.status[error.code] ?? String(error.code), details: error.details });
  }
  eventWaiter?.();
});
events.on("end", () => {
  streamOpen = false;
  if (!finished) {
    print({ kind: "stream-ended" });
  }
  eventWaiter?.();
});

let stopping = false;
const input = createInterface({ input: process.stdin });
input.on("line", (line) => {
  if (line.trim() === "stop") {
    stopping = true;
  }
});
input.on("close", () => {
  stopping = true;
});

phase = "depositing";
for (let sequence = 1; !stopping; sequence++) {
  const amount = 1 + ((sequence * 31) % 97);
  try {
    const balance = await unary("Deposit", { Value: amount });
    print({ kind: "deposit", sequence, amount, outcome: "acknowledged", balance: balance.Value, updates: balance.Updates, manager: balance.Manager });
  } catch (error) {
    print({ kind: "deposit", sequence, amount, outcome: "error", code: grpc.status[error.code] ?? String(error.code), details: error.details });
  }
}

phase = "reading the balance";
const balance = await unary("GetBalance", {});

phase = `waiting for the event of update ${balance.Updates} (last received: ${lastUpdate})`;
while (lastUpdate < balance.Updates && streamOpen) {
  await new Promise((resolve) => {
    eventWaiter = resolve;
  });
}

finished = true;
print({ kind: "done", balance: balance.Value, updates: balance.Updates, manager: balance.Manager, lastEvent: lastUpdate });
events.cancel();
client.close();
process.exit(0);
