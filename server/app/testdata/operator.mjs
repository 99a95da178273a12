// An operator wallet written from protocol/OPERATOR.md alone — no code
// shared with the game server — so that the contract, not our own reading
// of it, is what the tests exercise. In memory; misbehaves on request.
//
//   OPERATOR_KEY=… FAULTS=errors=0.05,timeouts=0.04,lost=0.02 FUND=20000 node operator.mjs
//
// Prints "listening <port>" once ready. GET /books (not in the contract)
// lists every player's book for the test's checks.
import http from 'node:http';
import crypto from 'node:crypto';

const key = process.env.OPERATOR_KEY;
const fund = Number(process.env.FUND || 20000);
const faults = Object.fromEntries((process.env.FAULTS || '').split(',').filter(Boolean)
  .map((kv) => { const [k, v] = kv.split('='); return [k, Number(v)]; }));

const books = new Map();   // player → {balance, deposits, debited, credited, rounds, credits}
const seen = new Map();    // tx → {body, status, answer}
const debits = new Map();  // debit tx → {player, amount}
const cancelled = new Set(); // debit txs rolled back
let injected = 0;            // faults injected

function book(player) {
  if (!books.has(player)) {
    books.set(player, { player, balance: fund, deposits: fund, debited: 0, credited: 0, rounds: {}, credits: {} });
  }
  return books.get(player);
}

const fail = (status, code, message) => [status, { error: { code, message } }];
const ok = (b) => [200, { balance: b.balance }];
const cents = (n) => Number.isSafeInteger(n);

// Each call once per tx; the same tx with another body is a conflict.
function once(tx, body, fn) {
  if (typeof tx !== 'string' || tx === '') return fail(400, 'bad_request', 'tx is required');
  const prior = seen.get(tx);
  if (prior) return prior.body === body ? [prior.status, prior.answer] : fail(409, 'tx_conflict', 'tx reused');
  const [status, answer] = fn();
  seen.set(tx, { body, status, answer });
  return [status, answer];
}

const calls = {
  '/wallet/balance': (c) => ok(book(c.player)),
  '/wallet/debit': (c, raw) => once(c.tx, raw, () => {
    if (!cents(c.amount) || c.amount <= 0 || !c.round) return fail(400, 'bad_request', 'amount and round');
    if (cancelled.has(c.tx)) return fail(409, 'rolled_back', 'this debit was rolled back');
    const b = book(c.player);
    if (b.balance < c.amount) return fail(402, 'insufficient_funds', 'balance too low');
    b.balance -= c.amount; b.debited += c.amount; b.rounds[c.tx] = c.amount;
    debits.set(c.tx, { player: c.player, amount: c.amount });
    return ok(b);
  }),
  '/wallet/credit': (c, raw) => once(c.tx, raw, () => {
    if (!cents(c.amount) || c.amount < 0) return fail(400, 'bad_request', 'amount');
    const d = debits.get(c.debit_tx);
    if (!d || d.player !== c.player || cancelled.has(c.debit_tx)) return fail(409, 'no_debit', 'no such debit');
    const b = book(c.player);
    b.balance += c.amount; b.credited += c.amount; b.credits[c.tx] = c.amount;
    return ok(b);
  }),
  '/wallet/rollback': (c, raw) => once(c.tx, raw, () => {
    const b = book(c.player);
    if (!cancelled.has(c.debit_tx)) {
      cancelled.add(c.debit_tx);
      const d = debits.get(c.debit_tx);
      if (d && d.player === c.player) {
        b.balance += d.amount; b.debited -= d.amount; delete b.rounds[c.debit_tx];
      }
    }
    return ok(b);
  }),
};

function signed(req, raw) {
  const ts = req.headers['x-keno-timestamp'] || '';
  if (!/^\d+$/.test(ts) || Math.abs(Date.now() - Number(ts)) > 5 * 60 * 1000) return false;
  const want = crypto.createHmac('sha256', key).update(ts + '.').update(raw).digest();
  const got = Buffer.from(req.headers['x-keno-signature'] || '', 'hex');
  return got.length === want.length && crypto.timingSafeEqual(got, want);
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const raw = Buffer.concat(chunks);
    const send = ([status, answer]) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer));
    };
    if (req.method === 'GET' && req.url === '/books') return send([200, { books: [...books.values()], faults: injected }]);
    const call = calls[req.url];
    if (req.method !== 'POST' || !call) return send(fail(404, 'not_found', 'no such call'));
    if (!signed(req, raw)) return send(fail(401, 'unauthorized', 'bad signature'));
    let c;
    try { c = JSON.parse(raw.toString('utf8')); } catch { return send(fail(400, 'bad_request', 'not JSON')); }
    if (typeof c.player !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(c.player)) return send(fail(400, 'bad_request', 'player'));
    const x = Math.random();
    const e = faults.errors || 0, t = e + (faults.timeouts || 0), l = t + (faults.lost || 0);
    if (x < l) injected++;
    if (x < e) return send(fail(500, 'internal', 'injected'));
    const answer = call(c, raw.toString('utf8'));
    if (x < t) return setTimeout(() => send(answer), 1000); // done, answered too late
    if (x < l) return req.socket.destroy();                   // done, answer lost
    send(answer);
  });
});
server.listen(0, '127.0.0.1', () => console.log('listening ' + server.address().port));
