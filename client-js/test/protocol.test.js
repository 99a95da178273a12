// Tests of keno-protocol.js against a running server (KENO_BASE, e.g.
// http://127.0.0.1:8080, in dev mode). Run by `go test ./server/app` or by
// hand: KENO_BASE=http://127.0.0.1:8080 npm test.
import { test } from "node:test";
import assert from "node:assert/strict";
import { KenoClient, KenoError, euros, validatePicks } from "../keno-protocol.js";

const base = process.env.KENO_BASE;
const wsURL = base.replace(/^http/, "ws") + "/ws";

async function player(name, deposit = 2000) {
  const r = await fetch(`${base}/api/dev/login?player=${name}`, { method: "POST" });
  assert.equal(r.status, 200);
  const { token } = await r.json();
  const c = new KenoClient(wsURL, { token, backoffMs: [50, 200] });
  const w = await c.connect();
  assert.equal(w.type, "welcome");
  assert.equal(w.player, name);
  if (deposit) await c.deposit(deposit, `seed-${name}-${Date.now()}`);
  return c;
}

// Plays pushed messages until ticket_done, answering offers.
function follow(c, { cont = false, box = 0 } = {}) {
  return new Promise((resolve, reject) => {
    const seen = [];
    const on = async (e) => {
      const m = e.detail;
      m.dispatchedAt = Date.now();
      seen.push(m);
      try {
        if (m.type === "soc_offer") await c.choose(m.game, cont);
        if (m.type === "extra_offer") await c.openBox(m.game, box);
      } catch (err) {
        if (err.code !== "disconnected") reject(err);
      }
      if (m.type === "ticket_done") {
        c.removeEventListener("message", on);
        resolve(seen);
      }
    };
    c.addEventListener("message", on);
  });
}

test("helpers", () => {
  assert.equal(euros(150), "1.50 €");
  assert.equal(euros(5), "0.05 €");
  assert.equal(validatePicks([1, 2, 3]), null);
  assert.match(validatePicks([1, 2]), /between 3 and 8/);
  assert.match(validatePicks([1, 2, 2]), /once/);
  assert.match(validatePicks([0, 2, 3]), /between 1 and 40/);
});

test("a full two-grid ticket, balance consistent", async () => {
  const c = await player("node-full", 2000);
  const sum = await c.ticket([{ picks: [1, 2, 3, 4], stake: 100 }, { quick_pick: 6, stake: 50 }]);
  assert.equal(sum.total, 150);
  assert.equal(sum.grids[1].picks.length, 6);
  const done = follow(c, { cont: true, box: 3 });
  const acc = await c.confirm(sum.ticket);
  assert.equal(acc.games.length, 2);
  assert.equal(acc.balance, 2000 - 150);
  const seen = await done;
  const settled = seen.filter((m) => m.type === "settled");
  assert.equal(settled.length, 2);
  const colors = seen.filter((m) => m.type === "color");
  assert.equal(colors.length, 20);
  assert.ok(colors.every((m) => m.t > 0), "timed messages carry their schedule");
  // Version 2: the steps arrive ahead of their t, and each message is
  // dispatched at its t on this clock, not before.
  assert.equal(c.welcome.version, 2);
  const timed = seen.filter((m) => m.t);
  const early = timed.filter((m) => m.dispatchedAt < m.t + c.clockOffset);
  assert.deepEqual(early.map((m) => m.type), [], "dispatched before their t");
  assert.ok(timed.some((m) => m.receivedAt < m.t + c.clockOffset), "nothing arrived ahead of its t");
  const win = settled.reduce((s, m) => s + (m.win ?? 0), 0);
  const last = seen.at(-1);
  assert.equal(last.type, "ticket_done");
  assert.equal(last.balance, 2000 - 150 + win);
  const b = await c.balance();
  assert.equal(b.balance, last.balance);
  c.close();
});

test("typed errors", async () => {
  const c = await player("node-errors", 100);
  await assert.rejects(c.ticket([{ picks: [1, 2], stake: 100 }]), (e) => e instanceof KenoError && e.code === "invalid_picks");
  await assert.rejects(c.ticket([{ picks: [1, 2, 3], stake: 75 }]), (e) => e.code === "invalid_stake");
  await assert.rejects(c.choose("nope", true), (e) => e.code === "not_your_turn");
  await assert.rejects(c.confirm("nope"), (e) => e.code === "no_such_ticket");
  const sum = await c.ticket([{ picks: [1, 2, 3], stake: 200 }]);
  await assert.rejects(c.confirm(sum.ticket), (e) => e.code === "insufficient_funds" && e.available === 100);
  await assert.rejects(c.request("launch", {}), (e) => e.code === "unknown_type");
  c.close();
});

test("reconnects with backoff and resumes the game", async () => {
  const c = await player("node-resume", 1000);
  const states = [];
  c.addEventListener("state", (e) => states.push(e.detail));
  let dropped = false;
  c.addEventListener("number", () => {
    if (!dropped) {
      dropped = true;
      c.dropForTest(); // the network fails mid-reveal
    }
  });
  const resumed = c.next("resume", 20000);
  const done = follow(c);
  const sum = await c.ticket([{ picks: [5, 10, 15, 20, 25], stake: 100 }]);
  await c.confirm(sum.ticket);
  const r = await resumed;
  assert.equal(r.games.length, 1);
  const seen = await done;
  assert.ok(states.includes("reconnecting") && states.at(-1) === "open", `states: ${states}`);
  const settled = seen.filter((m) => m.type === "settled");
  assert.equal(settled.length, 1, "paid once");
  const b = await c.balance();
  assert.equal(b.balance, 1000 - 100 + (settled[0].win ?? 0));
  c.close();
});

test("a second window takes over and the first does not fight back", async () => {
  const a = await player("node-twice", 0);
  const taken = a.next("session_taken_over", 10000);
  const b = await player("node-twice", 0);
  const m = await taken;
  assert.ok(m.text.length > 0);
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(a.state, "closed");
  assert.equal(b.state, "open");
  b.close();
});

// fair.js, the page's "verify this game", recomputes with WebCrypto exactly
// what the server dealt — on many games, so that every colour, Stop-or-
// Continue draw and Extra box is exercised — and refuses a wrong seed.
test("fair.js recomputes the server's games", async () => {
  const { verifyGame } = await import("../fair.js");
  const rules = await (await fetch(`${base}/api/rules`)).json();
  const c = await player("node-fair", 20000);
  await c.setClientSeed("node's own seed");
  const games = [];
  for (let i = 0; i < 6; i++) {
    const sum = await c.ticket([{ quick_pick: 3 + i, stake: [50, 100, 200][i % 3] }, { quick_pick: 8 - i, stake: 100 }]);
    const done = follow(c, { cont: i % 2 === 0, box: i % 5 });
    const acc = await c.confirm(sum.ticket);
    await done;
    games.push(...acc.games.map((g) => g.game));
  }
  await c.rotateSeed(); // reveals the seed the games were dealt from
  for (const id of games) {
    const { detail } = await c.game(id);
    assert.ok(detail.fair.server_seed, "the revealed seed comes with the game");
    const v = await verifyGame(detail, detail.fair.server_seed, rules.table);
    assert.equal(v.verdict, "ok", `game ${id}: ${JSON.stringify(v.differs)}`);
  }
  const { detail } = await c.game(games[0]);
  assert.equal((await verifyGame(detail, "00".repeat(32), rules.table)).verdict, "bad_commit");
  assert.equal((await verifyGame(detail, "not hex", rules.table)).verdict, "bad_seed");
  // The right seed for another game's record: the outcome differs.
  const other = { ...detail, fair: { ...detail.fair, nonce: detail.fair.nonce + 1 } };
  assert.equal((await verifyGame(other, detail.fair.server_seed, rules.table)).verdict, "mismatch");
  c.close();
});
