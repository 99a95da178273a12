// keno-protocol.js — a dependency-free ES module for the Keno Mystères wire
// protocol (see protocol/README.md). Works in browsers and in Node ≥ 20
// (pass WebSocket, or run Node with --experimental-websocket).
//
//   const c = new KenoClient("ws://host/ws", { token });
//   c.addEventListener("number", (e) => draw(e.detail));
//   await c.connect();
//   const sum = await c.ticket([{ picks: [1, 2, 3], stake: 100 }]);
//   await c.confirm(sum.ticket);           // the reveal arrives as events
//
// Every message the server pushes is dispatched as a CustomEvent named after
// its type (detail = the message), and also as "message". Connection state
// changes are "state" events (detail: connecting, open, reconnecting, closed).
// The client reconnects with exponential backoff; the server then resumes
// any game in progress (a "resume" event, then the game again).
//
// It speaks protocol version 2: the server sends each step of a game at
// once, ahead of time, and this client dispatches each of the game's
// messages at its t (on this machine's clock, from the welcome's "now"),
// in order — so the page animates as it did when the server paced every
// ball, at a fraction of the server's cost. Messages outside a game (a
// takeover, a notice) are dispatched at once.

export const PROTOCOL_VERSION = 2;

/** A typed error from the server (or "disconnected" / "timeout"). */
export class KenoError extends Error {
  constructor(e) {
    super(e.message || e.code);
    this.name = "KenoError";
    this.code = e.code;
    this.reason = e.reason;
    this.limit = e.limit;
    this.available = e.available;
    this.retryMs = e.retry_ms;
  }
}

/** Formats cents as euros, e.g. 150 → "1.50 €". */
export function euros(cents) {
  const sign = cents < 0 ? "-" : "";
  const c = Math.abs(cents);
  return `${sign}${Math.floor(c / 100)}.${String(c % 100).padStart(2, "0")} €`;
}

/** Checks picks locally as the server will: 3..8 distinct numbers in 1..40. */
export function validatePicks(picks, { min = 3, max = 8, grid = 40 } = {}) {
  if (!Array.isArray(picks) || picks.length < min || picks.length > max) return `pick between ${min} and ${max} numbers`;
  const seen = new Set();
  for (const n of picks) {
    if (!Number.isInteger(n) || n < 1 || n > grid) return `numbers must be between 1 and ${grid}`;
    if (seen.has(n)) return "each number may be picked once";
    seen.add(n);
  }
  return null;
}

export class KenoClient extends EventTarget {
  /**
   * @param {string} url ws:// or wss:// URL of /ws
   * @param {object} opts token (string) or getToken (async () => string),
   *   heartbeatMs, requestTimeoutMs, reconnect (bool), backoffMs [min, max], WebSocket
   */
  constructor(url, opts = {}) {
    super();
    this.url = url;
    this.getToken = opts.getToken || (async () => opts.token);
    this.heartbeatMs = opts.heartbeatMs ?? 15000;
    this.lastSent = 0; // ms; the heartbeat pings only after a silence
    this.requestTimeoutMs = opts.requestTimeoutMs ?? 15000;
    this.reconnect = opts.reconnect ?? true;
    this.backoff = opts.backoffMs ?? [250, 8000];
    this.WS = opts.WebSocket || globalThis.WebSocket;
    if (!this.WS) throw new Error("no WebSocket implementation (Node: run with --experimental-websocket)");
    this.nextId = 1;
    this.pending = new Map();
    this.state = "closed";
    this.welcome = null;
    this.attempt = 0;
    this.closedByUser = false;
    this.queue = []; // a game's messages received ahead, waiting for their t
    this.queueTimer = null;
    this.clockOffset = 0; // this clock minus the server's (ms), from the welcome
  }

  /** Opens the connection and authenticates; resolves with the welcome. */
  connect() {
    this.closedByUser = false;
    return this.#open();
  }

  #setState(s) {
    this.state = s;
    this.dispatchEvent(new CustomEvent("state", { detail: s }));
  }

  #open() {
    this.#setState(this.attempt === 0 ? "connecting" : "reconnecting");
    return new Promise((resolve, reject) => {
      const ws = new this.WS(this.url);
      this.ws = ws;
      let welcomed = false;
      ws.onopen = async () => {
        try {
          const token = await this.getToken();
          const w = await this.request("hello", { token, versions: [PROTOCOL_VERSION, 1] });
          welcomed = true;
          this.clockOffset = w.now ? w.receivedAt - w.now : 0;
          this.attempt = 0;
          this.welcome = w;
          this.#setState("open");
          this.#startHeartbeat();
          resolve(w);
        } catch (e) {
          reject(e);
          if (e.code === "unauthorized" || e.code === "unsupported_version" || e.code === "account_blocked") this.closedByUser = true;
          ws.close();
        }
      };
      ws.onmessage = (ev) => this.#onMessage(ev.data);
      ws.onerror = () => {};
      ws.onclose = () => {
        this.#stopHeartbeat();
        this.#dropQueue(); // a game not settled is resumed, from its start, on the next connection
        for (const [, p] of this.pending) p.reject(new KenoError({ code: "disconnected", message: "connection lost" }));
        this.pending.clear();
        if (!welcomed) reject(new KenoError({ code: "disconnected", message: "could not connect" }));
        if (this.closedByUser || !this.reconnect) {
          this.#setState("closed");
          return;
        }
        this.#scheduleReconnect();
      };
    });
  }

  #scheduleReconnect() {
    this.attempt++;
    const [min, max] = this.backoff;
    const delay = Math.min(max, min * 2 ** (this.attempt - 1)) * (0.5 + Math.random() / 2);
    this.#setState("reconnecting");
    this.reconnectTimer = setTimeout(() => {
      this.#open().catch(() => {}); // a failed attempt closes and schedules the next one
    }, delay);
  }

  // A ping only when the client has said nothing for a while: any message
  // tells the server the connection is alive.
  #startHeartbeat() {
    this.#stopHeartbeat();
    this.heartbeat = setInterval(() => {
      if (Date.now() - this.lastSent >= this.heartbeatMs / 2) this.#send({ type: "ping" });
    }, this.heartbeatMs);
  }

  #stopHeartbeat() {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }

  #send(obj) {
    if (!this.ws || this.ws.readyState !== 1) return false;
    this.ws.send(JSON.stringify(obj));
    this.lastSent = Date.now();
    return true;
  }

  #onMessage(data) {
    let m;
    try {
      m = JSON.parse(data);
    } catch {
      return;
    }
    m.receivedAt = Date.now();
    if (m.id && this.pending.has(m.id)) {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      clearTimeout(p.timer);
      if (m.type === "error") p.reject(new KenoError(m.error));
      else p.resolve(m);
      return;
    }
    if (m.type === "session_taken_over") this.closedByUser = true; // do not fight the other window
    if (m.type === "error" && m.error?.code === "kicked") this.closedByUser = true; // the operator ended it
    if (this.welcome?.version >= 2 && (m.game || m.ticket)) {
      this.queue.push(m);
      if (this.queue.length === 1) this.#drain();
      return;
    }
    this.#dispatch(m);
  }

  #dispatch(m) {
    this.dispatchEvent(new CustomEvent("message", { detail: m }));
    this.dispatchEvent(new CustomEvent(m.type, { detail: m }));
  }

  // Dispatches the game's messages in order, each once its t has come.
  #drain() {
    clearTimeout(this.queueTimer);
    this.queueTimer = null;
    while (this.queue.length) {
      const m = this.queue[0];
      const wait = m.t ? m.t + this.clockOffset - Date.now() : 0;
      if (wait > 0) {
        this.queueTimer = setTimeout(() => this.#drain(), wait);
        return;
      }
      this.queue.shift();
      this.#dispatch(m);
    }
  }

  #dropQueue() {
    clearTimeout(this.queueTimer);
    this.queueTimer = null;
    this.queue = [];
  }

  /** Sends a request and resolves with its reply (rejects with KenoError). */
  request(type, fields = {}) {
    const id = String(this.nextId++);
    return new Promise((resolve, reject) => {
      if (!this.#send({ type, id, ...fields })) {
        reject(new KenoError({ code: "disconnected", message: "not connected" }));
        return;
      }
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new KenoError({ code: "timeout", message: `no reply to ${type}` }));
      }, this.requestTimeoutMs);
      this.pending.set(id, { resolve, reject, timer });
    });
  }

  /** Resolves with the next pushed message of this type. */
  next(type, timeoutMs = 30000) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.removeEventListener(type, on);
        reject(new KenoError({ code: "timeout", message: `no ${type} message` }));
      }, timeoutMs);
      const on = (e) => {
        clearTimeout(timer);
        this.removeEventListener(type, on);
        resolve(e.detail);
      };
      this.addEventListener(type, on);
    });
  }

  ticket(grids) { return this.request("ticket", { grids }); }
  confirm(ticket) { return this.request("confirm", { ticket }); }
  choose(game, cont) { return this.request("choice", { game, continue: !!cont }); }
  openBox(game, box) { return this.request("box", { game, box }); }
  replayLast() { return this.request("replay", { last: true }); }
  replay(game) { return this.request("replay", { game }); }
  balance() { return this.request("balance"); }
  history(before = 0, limit = 20) { return this.request("history", before ? { before, limit } : { limit }); }
  game(game) { return this.request("game", { game }); }
  deposit(amount, op) { return this.request("deposit", { amount, op }); }
  setLimit(kind, value) { return this.request("set_limit", { kind, value }); }
  setClientSeed(seed) { return this.request("client_seed", { seed }); }
  rotateSeed() { return this.request("rotate_seed"); }

  /** Closes for good (no reconnection). */
  close() {
    this.closedByUser = true;
    clearTimeout(this.reconnectTimer);
    this.#stopHeartbeat();
    this.#dropQueue();
    if (this.ws) this.ws.close();
  }

  /** Drops the socket as a network failure would (the client reconnects). */
  dropForTest() {
    if (this.ws) this.ws.close();
  }
}
