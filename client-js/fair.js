// fair.js — recomputes a game in the browser from its provably fair inputs
// (server seed, client seed, nonce), with WebCrypto, exactly as the server
// deals it: protocol/README.md, "FAIRNESS". The prize figures come from the
// server's published table (GET /api/rules), read as exact fractions.

const enc = new TextEncoder();

/** Parses hex into bytes; null if it is not an even-length hex string. */
export function hexBytes(hex) {
  const h = String(hex).trim();
  if (!/^(?:[0-9a-fA-F]{2})+$/.test(h)) return null;
  const out = new Uint8Array(h.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(h.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export async function sha256Hex(bytes) {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return [...d].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** A decimal figure of the table as an exact fraction [num, den], reduced. */
export function ratio(x) {
  const [int, frac = ""] = String(x).split(".");
  let num = BigInt(int + frac), den = 10n ** BigInt(frac.length);
  const g = gcd(num, den);
  return [num / g, den / g];
}
function gcd(a, b) { while (b) [a, b] = [b, a % b]; return a; }

// The stream of 32-bit words: HMAC-SHA256(server seed, client ":" nonce ":" block).
class Stream {
  constructor(key, client, nonce) {
    this.key = key; this.prefix = `${client}:${nonce}:`; this.block = 0; this.words = []; this.off = 0;
  }
  async word() {
    if (this.off === this.words.length) {
      const mac = await crypto.subtle.sign("HMAC", this.key, enc.encode(this.prefix + this.block++));
      const v = new DataView(mac);
      this.words = Array.from({ length: 8 }, (_, i) => v.getUint32(4 * i));
      this.off = 0;
    }
    return this.words[this.off++];
  }
  // uniform(n): no modulo bias (words at or above 2^32 − 2^32 mod n are skipped).
  async uniform(n) {
    const limit = 2 ** 32 - (2 ** 32 % n);
    for (;;) {
      const w = await this.word();
      if (w < limit) return w % n;
    }
  }
}

/**
 * Deals a game: { numbers[10], colors[10], soc_draw[3], boxes[5] } — the
 * same fields as the server's sealed outcome.
 */
export async function deal(seedBytes, clientSeed, nonce, picksCount, stake, table) {
  const key = await crypto.subtle.importKey("raw", seedBytes, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const s = new Stream(key, clientSeed, nonce);
  const pool = Array.from({ length: 40 }, (_, i) => i + 1);
  for (let i = 0; i < 13; i++) {
    const j = i + (await s.uniform(40 - i));
    [pool[i], pool[j]] = [pool[j], pool[i]];
  }
  const colors = Array(10).fill("blue");
  for (const c of ["green", "gold", "red"]) {
    const [num, den] = ratio(table.mystery[c]);
    if (BigInt(await s.uniform(Number(den))) >= num) continue;
    const free = colors.flatMap((col, pos) => (col === "blue" ? [pos] : []));
    colors[free[await s.uniform(free.length)]] = c;
  }
  // Extra: probabilities over their common denominator, prizes × stake rounded down.
  const probs = table.extra.probabilities.map(ratio);
  const den = probs.reduce((d, [, pd]) => (d * pd) / gcd(d, pd), 1n);
  const weights = probs.map(([pn, pd]) => pn * (den / pd));
  const prizes = table.extra.prizes_x_stake[String(picksCount)].map(ratio);
  const boxes = [];
  for (let b = 0; b < 5; b++) {
    const u = BigInt(await s.uniform(Number(den)));
    let i = 0;
    for (let acc = weights[0]; u >= acc; acc += weights[i]) i++;
    const [pn, pd] = prizes[i];
    boxes.push(Number((BigInt(stake) * pn) / pd));
  }
  return { numbers: pool.slice(0, 10), colors, soc_draw: pool.slice(10, 13), boxes };
}

/**
 * Checks a stored game against its inputs: "ok", "bad_seed", "bad_commit",
 * or "mismatch" with the parts that differ.
 */
export async function verifyGame(detail, seedHex, table) {
  const seed = hexBytes(seedHex);
  if (!seed) return { verdict: "bad_seed" };
  if ((await sha256Hex(seed)) !== detail.fair.commit) return { verdict: "bad_commit" };
  const o = detail.outcome;
  const got = await deal(seed, detail.fair.client_seed, detail.fair.nonce, o.picks.length, o.stake, table);
  const differs = ["numbers", "colors", "soc_draw", "boxes"].filter((k) => JSON.stringify(got[k]) !== JSON.stringify(o[k]));
  return { verdict: differs.length ? "mismatch" : "ok", differs, computed: got };
}
