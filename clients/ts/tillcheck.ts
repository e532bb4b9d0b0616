// tillcheck: a till's first exchanges with posedge, typed by the
// openapi-typescript output for docs/openapi.yaml (gen/till.ts) so that a
// change to the description the program does not follow fails tsc. It
// looks an item up, sells one unit, sends the same sale again with the same
// Idempotency-Key (which must answer the same sale, marked
// Idempotent-Replayed), and refunds it. Run by clients/tillclient's Go test
// against a real daemon (through a proxy that checks every exchange against
// docs/openapi.yaml); by hand:
//
//   POSEDGE_URL=http://127.0.0.1:18080 POSEDGE_TERMINAL_KEY=… \
//   POSEDGE_BARCODE=2000000000001 POSEDGE_KEY_PREFIX=T01-ts-1 node dist/tillcheck.js
//
// It prints one JSON line (what it saw) and exits 0, or says what was wrong
// and exits 1.
import type { paths } from "./gen/till.js";
import type { paths as hqPaths } from "./gen/hq.js";

// Node's globals this program uses (no @types/node: fewer pinned packages).
declare const process: {
  env: Record<string, string | undefined>;
  exitCode: number | undefined;
};

type JSONOf<R> = R extends { content: { "application/json": infer B } } ? B : never;
type Item = JSONOf<paths["/v1/items/{barcode}"]["get"]["responses"][200]>;
type SaleRequest = paths["/v1/sales"]["post"]["requestBody"]["content"]["application/json"];
type Sale = JSONOf<paths["/v1/sales"]["post"]["responses"][201]>;
type RefundRequest = paths["/v1/refunds"]["post"]["requestBody"]["content"]["application/json"];
type Refund = JSONOf<paths["/v1/refunds"]["post"]["responses"][201]>;
type ErrorBody = JSONOf<paths["/v1/sales"]["post"]["responses"][400]>;
// posedge-hq's admin API compiles too (HQ engineers' tools); one type used
// so the import is not dropped unchecked.
export type StoreList = JSONOf<hqPaths["/v1/stores"]["get"]["responses"][200]>;

function need(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

const base = need("POSEDGE_URL");
const key = need("POSEDGE_TERMINAL_KEY");
const barcode = need("POSEDGE_BARCODE");
const prefix = need("POSEDGE_KEY_PREFIX");

interface Answer<T> {
  status: number;
  headers: Headers;
  body: T;
}

async function call<T>(method: string, path: string, body?: unknown, idem?: string): Promise<Answer<T>> {
  const headers: Record<string, string> = { Authorization: `Bearer ${key}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (idem !== undefined) headers["Idempotency-Key"] = idem;
  const res = await fetch(base + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`${method} ${path}: ${res.status}, not JSON: ${text.slice(0, 200)}`);
  }
  return { status: res.status, headers: res.headers, body: parsed as T };
}

function want<T>(what: string, a: Answer<unknown>, status: number): T {
  if (a.status !== status) {
    const e = a.body as ErrorBody;
    throw new Error(`${what}: ${a.status} (${e?.error?.code ?? "?"}: ${e?.error?.message ?? JSON.stringify(a.body)}), want ${status}`);
  }
  return a.body as T;
}

async function main(): Promise<void> {
  const item = want<Item>("lookup", await call("GET", `/v1/items/${encodeURIComponent(barcode)}`), 200);
  if (item.barcode !== barcode) throw new Error(`lookup: barcode ${item.barcode}, want ${barcode}`);

  const sale: SaleRequest = {
    lines: [{ barcode, qty: 1, price_cents: item.price_cents }],
    total_cents: item.price_cents,
    tender: "cash",
    receipt_no: `${prefix}-R1`,
  };
  const first = await call<Sale>("POST", "/v1/sales", sale, `${prefix}-sale`);
  const sold = want<Sale>("sale", first, 201);
  if (sold.kind !== "sale" || sold.total_cents !== item.price_cents) {
    throw new Error(`sale: kind ${sold.kind}, total ${sold.total_cents}, want sale of ${item.price_cents}`);
  }
  if (first.headers.get("Idempotent-Replayed") === "true") throw new Error("sale: the first answer is marked replayed");

  const again = await call<Sale>("POST", "/v1/sales", sale, `${prefix}-sale`);
  const replayed = want<Sale>("replay", again, 201);
  if (again.headers.get("Idempotent-Replayed") !== "true") {
    throw new Error(`replay: Idempotent-Replayed is ${again.headers.get("Idempotent-Replayed")}, want true`);
  }
  if (JSON.stringify(replayed) !== JSON.stringify(sold)) {
    throw new Error(`replay: ${JSON.stringify(replayed)} is not the first answer ${JSON.stringify(sold)}`);
  }

  const refund: RefundRequest = {
    original_flow_no: sold.flow_no,
    lines: [{ barcode, qty: 1 }],
    total_cents: item.price_cents,
  };
  const back = want<Refund>("refund", await call("POST", "/v1/refunds", refund, `${prefix}-refund`), 201);
  if (back.kind !== "refund" || back.original_flow_no !== sold.flow_no || back.total_cents !== item.price_cents) {
    throw new Error(`refund: ${JSON.stringify(back)} is not a refund of ${sold.flow_no} for ${item.price_cents}`);
  }
  console.log(JSON.stringify({ item, sale: sold, replayed: true, refund: back }));
}

main().catch((err: unknown) => {
  console.error(`tillcheck: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
