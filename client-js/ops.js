// The live-ops console: figures fed once a second by /ops/feed (SSE), a
// player lookup with game recall, and — for the operator role — actions on
// a player, maintenance and broadcast through the ops API.
// Plots are drawn on canvases here; nothing is fetched from elsewhere.
import { euros } from "./keno-protocol.js";

const $ = (id) => document.getElementById(id);
const series = { gps: [], online: [], rtp: [], lo: [], hi: [], reveal: [], accept: [] };
const KEEP = 3600; // an hour of one-second points (the server keeps it too: a reload loses nothing)
let last = null;

function push(name, v) {
  series[name].push(v);
  if (series[name].length > KEEP) series[name].shift();
}

const pct = (x) => `${(100 * x).toFixed(2)}%`;
const ms = (x) => `${x.toFixed(1)} ms`;

function render(s) {
  last = s;
  $("server").textContent = `server ${s.server} · ${s.servers} live`;
  $("updated").textContent = new Date(s.at).toLocaleTimeString();
  $("online").textContent = s.online_cluster;
  $("online-detail").textContent = `${s.online} on this server`;
  $("gps").textContent = s.games_per_sec_cluster.toFixed(1);
  $("gps-detail").textContent = `${s.games_per_sec.toFixed(1)} on this server · ${s.games_in_play} in play` +
    (s.admission_limit >= 0 ? ` (limit ${s.admission_limit}: new tickets refused busy beyond it)` : "");
  $("stakes").textContent = euros(s.stakes_per_min);
  $("wins").textContent = `wins ${euros(s.wins_per_min)} / min`;
  $("ggr").textContent = euros(s.stakes_per_min - s.wins_per_min);
  $("ggr-detail").textContent = `last hour ${euros(s.ggr_hour)}, last 24 h ${euros(s.ggr_day)} (cluster, since this server watches)`;
  $("maint-state").textContent = s.maintenance ? `MAINTENANCE: “${s.maintenance}”` : "open: tickets accepted";
  // Jackpots make small samples noisy: judge the RTP only on 10 000+ games.
  const inBand = s.rtp_games < 10000 || (s.rtp_observed + s.rtp_half_ci >= s.rtp_theory_min && s.rtp_observed - s.rtp_half_ci <= s.rtp_theory_max);
  $("rtp").textContent = s.rtp_games ? pct(s.rtp_observed) : "—";
  $("rtp").parentElement.classList.toggle("alert", !inBand);
  $("rtp-detail").textContent = `±${pct(s.rtp_half_ci)} over ${s.rtp_games} games; theory ${pct(s.rtp_theory_min)}–${pct(s.rtp_theory_max)}; cluster ${pct(s.rtp_cluster)}`;
  $("reveal").textContent = ms(s.reveal_p99_ms);
  $("reveal-detail").textContent = `p50 ${ms(s.reveal_p50_ms)}, last minute`;
  $("reveal").parentElement.classList.toggle("alert", s.reveal_p99_ms > 20);
  $("accept").textContent = ms(s.accept_p99_ms);
  $("accept-detail").textContent = `p50 ${ms(s.accept_p50_ms)}, last minute`;
  $("accept").parentElement.classList.toggle("alert", s.accept_p99_ms > 50);
  $("errors").textContent = s.errors_per_sec.toFixed(2);
  $("errors-detail").textContent = `Redis errors ${s.redis_errors_per_sec.toFixed(2)} / s` + (s.seamless
    ? ` · operator wallet ${(s.operator_calls_per_sec || 0).toFixed(1)} calls/s, ${pct(s.operator_failed || 0)} failed (last minute)`
    : "");
  $("errors").parentElement.classList.toggle("alert", s.redis_errors_per_sec > 0 || s.operator_failed > 0.05);
  $("open").textContent = s.open_games;
  $("rtp-picks").replaceChildren(...(s.rtp_by_picks || []).map((r) => {
    const tr = document.createElement("tr");
    for (const v of [r.picks, r.games, `${pct(r.observed)} ± ${pct(r.half_ci)}`, `${pct(r.theory_min)}–${pct(r.theory_max)}`]) {
      const td = document.createElement("td");
      td.textContent = v;
      tr.append(td);
    }
    const out = r.games >= 10000 && (r.observed + r.half_ci < r.theory_min || r.observed - r.half_ci > r.theory_max);
    tr.classList.toggle("alert-row", out);
    return tr;
  }));
  $("soc").textContent = pct(s.soc_offer_rate);
  $("soc-detail").textContent = `offered per game; ${pct(s.soc_continue_rate)} of offers continued`;
  $("extra").textContent = pct(s.extra_rate);
  const codes = [...Object.entries(s.errors_by_code || {}).map(([k, v]) => [`error ${k}`, v]),
    ...Object.entries(s.refusals_by_reason || {}).map(([k, v]) => [`refused ${k}`, v])];
  $("codes").replaceChildren(...(codes.length ? codes : [["none", ""]]).flatMap(([k, v]) => {
    const dt = document.createElement("dt"), dd = document.createElement("dd");
    dt.textContent = k;
    dd.textContent = v;
    return [dt, dd];
  }));

  $("bigwins").replaceChildren(...(s.big_wins || []).map((w) => {
    const tr = document.createElement("tr");
    for (const v of [new Date(w.at).toLocaleTimeString(), w.player, euros(w.stake), euros(w.win)]) {
      const td = document.createElement("td");
      td.textContent = v;
      tr.append(td);
    }
    return tr;
  }));
  const r = s.redis;
  const rows = r.ok
    ? [["state", "ok"], ["kind", r.kind], ["ping", ms(r.ping_ms)], ["nodes", r.nodes], ["memory", r.used_memory], ["ops/s", r.ops_per_sec], ["clients", r.clients]]
    : [["state", "DOWN"], ["error", r.error]];
  $("redis").replaceChildren(...rows.flatMap(([k, v]) => {
    const dt = document.createElement("dt");
    const dd = document.createElement("dd");
    dt.textContent = k;
    dd.textContent = v;
    return [dt, dd];
  }));

  push("gps", s.games_per_sec_cluster);
  push("online", s.online_cluster);
  push("rtp", s.rtp_games ? s.rtp_observed : NaN);
  push("lo", s.rtp_games ? s.rtp_observed - s.rtp_half_ci : NaN);
  push("hi", s.rtp_games ? s.rtp_observed + s.rtp_half_ci : NaN);
  push("reveal", s.reveal_p99_ms);
  push("accept", s.accept_p99_ms);
  draw();
}

// plot draws lines (and an optional shaded band) on a canvas.
function plot(canvas, lines, { band = null, fixed = null } = {}) {
  const ctx = canvas.getContext("2d");
  const W = canvas.width, H = canvas.height, pad = 34;
  ctx.clearRect(0, 0, W, H);
  const all = lines.flatMap((l) => l.data).filter(Number.isFinite);
  if (fixed) all.push(...fixed);
  if (!all.length) return;
  let lo = Math.min(...all), hi = Math.max(...all);
  if (hi - lo < 1e-9) { hi += 1; lo -= lo > 0 ? Math.min(1, lo) : 0; }
  const x = (i, n) => pad + (i * (W - pad - 6)) / Math.max(1, KEEP - 1) + (KEEP - n) * (W - pad - 6) / Math.max(1, KEEP - 1);
  const y = (v) => H - 16 - ((v - lo) * (H - 26)) / (hi - lo);
  ctx.fillStyle = "#8f98c8";
  ctx.font = "11px system-ui";
  ctx.fillText(+hi.toFixed(3), 2, 12);
  ctx.fillText(+lo.toFixed(3), 2, H - 18);
  if (fixed) {
    ctx.fillStyle = "#2bb67333";
    ctx.fillRect(pad, y(fixed[1]), W - pad, y(fixed[0]) - y(fixed[1]));
  }
  if (band) {
    ctx.fillStyle = "#ffcc3333";
    const [a, b] = band;
    ctx.beginPath();
    a.forEach((v, i) => Number.isFinite(v) && ctx.lineTo(x(i, a.length), y(v)));
    for (let i = b.length - 1; i >= 0; i--) if (Number.isFinite(b[i])) ctx.lineTo(x(i, b.length), y(b[i]));
    ctx.fill();
  }
  for (const l of lines) {
    ctx.strokeStyle = l.color;
    ctx.lineWidth = 2;
    ctx.beginPath();
    let started = false;
    l.data.forEach((v, i) => {
      if (!Number.isFinite(v)) return;
      if (started) ctx.lineTo(x(i, l.data.length), y(v));
      else { ctx.moveTo(x(i, l.data.length), y(v)); started = true; }
    });
    ctx.stroke();
  }
}

function draw() {
  plot($("chart-gps"), [{ data: series.gps, color: "#ffcc33" }]);
  plot($("chart-online"), [{ data: series.online, color: "#7ab8ff" }]);
  plot($("chart-rtp"), [{ data: series.rtp, color: "#ffcc33" }], { band: [series.lo, series.hi], fixed: last ? [last.rtp_theory_min, last.rtp_theory_max] : null });
  plot($("chart-lat"), [{ data: series.reveal, color: "#ff8a8c" }, { data: series.accept, color: "#7ff0b8" }]);
}

// The ops token never travels in a URL: it is typed into the form (or
// given after "#token=", which stays in the browser), traded once for an
// HttpOnly session cookie, and the feed then rides on the cookie.
async function login(token) {
  const r = await fetch("/api/ops/login", { method: "POST", headers: { Authorization: `Bearer ${token}` } });
  return r.ok;
}

async function signedIn() {
  const r = await fetch("/ops/session");
  if (!r.ok) return false;
  const { role } = await r.json();
  $("role").textContent = `role: ${role}`;
  document.body.classList.toggle("viewer", role !== "operator");
  return true;
}

// api calls the ops API with the console's cookie; actions carry the
// console's header (the server refuses a cookie action without it).
async function api(method, path, body) {
  const r = await fetch(path, { method, headers: { "X-Keno-Console": "1", ...(body ? { "Content-Type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined });
  const text = await r.text();
  const data = text ? JSON.parse(text) : null;
  if (!r.ok) throw new Error(data?.message || r.statusText);
  return data;
}

const el = (tag, text) => Object.assign(document.createElement(tag), { textContent: text });
let shown = "";

async function lookup(id) {
  $("lookup-error").textContent = "";
  try {
    const v = await api("GET", `/api/ops/players/${encodeURIComponent(id)}`);
    shown = v.player;
    $("player-title").textContent = `Player ${v.player}`;
    const l = v.limits;
    const facts = [["balance", euros(v.account.balance)], ["deposited / withdrawn", `${euros(v.account.deposited)} / ${euros(v.account.withdrawn)}`],
      ["deposit cap", `${euros(l.deposit_cap)} a week (${euros(l.deposited_week)} used)`],
      ["loss limit", l.loss_limit < 0 ? "none" : `${euros(l.loss_limit)} a day (${euros(Math.max(0, l.lost_today))} lost today)`],
      ["excluded until", l.excluded_until > Date.now() ? new Date(l.excluded_until).toLocaleString() : "—"],
      ["blocked", v.blocked ? "yes" : "no"], ["online here", v.online_here ? "yes" : "no"],
      ["open games", String((v.open_games || []).length)], ["journal", v.journal]];
    $("player-facts").replaceChildren(...facts.flatMap(([k, val]) => [el("dt", k), el("dd", val)]));
    $("player-games").replaceChildren(...(v.last_games || []).map((g) => {
      const tr = document.createElement("tr");
      for (const val of [new Date(g.created).toLocaleString(), g.outcome.picks.join(" "), euros(g.outcome.stake), g.status === "settled" ? euros(g.win) : "in play"]) tr.append(el("td", val));
      const b = el("button", "Recall");
      b.type = "button";
      b.setAttribute("aria-label", `Recall game ${g.id}`);
      b.onclick = () => recall(g.id, v.player);
      const td = document.createElement("td");
      td.append(b);
      tr.append(td);
      return tr;
    }));
    $("recall").hidden = true;
    $("player").hidden = false;
  } catch (e) {
    $("player").hidden = true;
    $("lookup-error").textContent = e.message;
  }
}

async function recall(id, player) {
  try {
    const r = await api("GET", `/api/ops/games/${encodeURIComponent(id)}?player=${encodeURIComponent(player)}`);
    const g = r.game;
    const lines = [`game ${g.id} of ${r.player} — ticket ${g.ticket}, grid ${g.index + 1} of ${g.grids}`,
      `accepted ${new Date(g.created).toLocaleString()}; ${g.status}${g.settled ? " " + new Date(g.settled).toLocaleString() : ""}`,
      `picks ${g.outcome.picks.join(" ")}, stake ${euros(g.outcome.stake)}`,
      `drawn ${g.outcome.numbers.join(" ")}`, `colours ${g.outcome.colors.join(" ")}`,
      `stop-or-continue draw ${g.outcome.soc_draw.join(" ")}; continue ${g.continue ?? "—"}`,
      `extra boxes ${g.outcome.boxes.map(euros).join(" ")}; box ${g.box ?? "—"}`, `win ${euros(g.win)}`,
      `provably fair: commit ${g.fair.commit}, client seed "${g.fair.client_seed}", nonce ${g.fair.nonce}`];
    $("recall").textContent = lines.join("\n");
    $("recall").hidden = false;
    $("recall").focus();
  } catch (e) {
    $("lookup-error").textContent = e.message;
  }
}

async function act(action, body, confirmText) {
  if (!shown || !confirm(confirmText)) return;
  try {
    await api("POST", `/api/ops/players/${encodeURIComponent(shown)}/${action}`, body);
    $("action-result").textContent = `${action}: done`;
    lookup(shown);
  } catch (e) {
    $("action-result").textContent = `${action}: ${e.message}`;
  }
}

function wireConsole() {
  $("lookup").addEventListener("submit", (e) => { e.preventDefault(); lookup($("lookup-id").value.trim()); });
  $("act-kick").onclick = () => act("kick", null, `End ${shown}'s session now?`);
  $("act-block").onclick = () => act("block", { reason: "operator" }, `Block ${shown}? They cannot log in until unblocked.`);
  $("act-unblock").onclick = () => act("unblock", null, `Unblock ${shown}?`);
  $("act-limit").onclick = () => act("limit", { kind: "loss_limit", value: Math.round(+$("act-loss").value * 100) }, `Lower ${shown}'s daily loss limit at once?`);
  $("act-exclude").onclick = () => act("exclude", { days: +$("act-days").value }, `Exclude ${shown} for ${$("act-days").value} days? It cannot be undone before its end.`);
  $("maint").addEventListener("submit", async (e) => {
    e.preventDefault();
    try { await api("POST", "/api/ops/maintenance", { message: $("maint-msg").value }); $("maint-state").textContent = "maintenance starting…"; } catch (err) { $("maint-state").textContent = err.message; }
  });
  $("maint-off").onclick = async () => {
    try { await api("DELETE", "/api/ops/maintenance"); $("maint-state").textContent = "maintenance ending…"; } catch (err) { $("maint-state").textContent = err.message; }
  };
  $("broadcast").addEventListener("submit", async (e) => {
    e.preventDefault();
    try { await api("POST", "/api/ops/broadcast", { message: $("broadcast-msg").value }); $("broadcast-msg").value = ""; } catch (err) { $("maint-state").textContent = err.message; }
  });
}

function askToken(message) {
  $("feed").dataset.state = "closed";
  $("feed").textContent = "unauthorized";
  $("login-error").textContent = message;
  $("login").hidden = false;
  $("token").focus();
}

function connect() {
  $("login").hidden = true;
  const es = new EventSource("/ops/feed");
  es.onopen = () => { $("feed").dataset.state = "open"; $("feed").textContent = "live"; };
  es.onerror = async () => {
    $("feed").dataset.state = "closed";
    $("feed").textContent = "reconnecting…";
    if (!(await signedIn().catch(() => true))) { es.close(); askToken("Your session has ended: enter the ops token again."); }
  };
  es.addEventListener("history", (e) => {
    for (const k of Object.keys(series)) series[k] = [];
    for (const [, online, gps, rtp, lo, hi, reveal, accept] of JSON.parse(e.data) || []) {
      push("gps", gps);
      push("online", online);
      push("rtp", rtp || NaN);
      push("lo", rtp ? lo : NaN);
      push("hi", rtp ? hi : NaN);
      push("reveal", reveal);
      push("accept", accept);
    }
  });
  es.onmessage = (e) => {
    const s = JSON.parse(e.data);
    if (s.at) render(s);
  };
}

$("login").addEventListener("submit", async (e) => {
  e.preventDefault();
  if (await login($("token").value)) { $("token").value = ""; connect(); }
  else askToken("Wrong ops token.");
});

async function start() {
  const fromHash = new URLSearchParams(location.hash.slice(1)).get("token");
  if (fromHash) {
    history.replaceState(null, "", location.pathname); // out of the address bar and history
    if (!(await login(fromHash))) return askToken("Wrong ops token.");
  }
  if (await signedIn()) connect();
  else askToken("Enter the ops token (KENO_OPS_TOKEN) to see the live figures.");
}

wireConsole();
start();
