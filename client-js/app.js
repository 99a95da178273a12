// The Keno Mystères game page: connection, ticket builder and the draw.
// The dialogs (rules, history, verify, limits, reality check) are in
// panels.js; every word shown comes from lang/<code>.js through i18n.js.
import { KenoClient, KenoError, validatePicks } from "./keno-protocol.js";
import * as i18n from "./i18n.js";
import { t, euros } from "./i18n.js";
import * as sound from "./sound.js";
import * as panels from "./panels.js";
import { ratio } from "./fair.js";

export const $ = (sel) => document.querySelector(sel);
export const el = (tag, props = {}, ...children) => {
  const e = Object.assign(document.createElement(tag), props);
  e.append(...children);
  return e;
};

export const state = {
  client: null,
  config: { min_picks: 3, max_picks: 8, grid: 40, max_grids: 5, stakes: [50, 100, 200], default_stake: 100, hold_ms: 3000 },
  rules: null, // GET /api/rules: the engine's table and PAR, once loaded
  grids: [{ picks: new Set(), stake: 100 }],
  current: 0,
  focusN: 1, // the grid number that takes the Tab stop
  ticket: null, // summary under review
  playing: false,
  g: null, // the game on screen (a view of the messages received)
  done: null, // the last ticket's summary
  ticketStake: 0, // the ticket confirmed from this page
  stakes: [], // stake of each game of the ticket on screen, by index
  session: { start: Date.now(), staked: 0, won: 0 },
  player: "",
};

const reducedMotion = matchMedia("(prefers-reduced-motion: reduce)");

// ---------- messages ----------

let lastSaid = null; // re-said in the new language on a switch

export function say(key, vars = {}, kind = "info", action = null) {
  lastSaid = { key, vars, kind, action };
  const m = $("#message");
  m.replaceChildren(el("span", { textContent: t(key, vars) }));
  if (action) m.append(" ", el("button", { type: "button", textContent: t(action.label), onclick: action.run }));
  m.dataset.kind = kind;
}

export function announce(text) {
  $("#announce").textContent = text;
}

/** Shows a refusal or failure in the player's words: by its code, never raw. */
export function explain(err) {
  if (!(err instanceof KenoError)) err = new KenoError({ code: "unknown", message: String(err?.message || err) });
  const vars = { message: err.message || err.code, available: euros(err.available), s: Math.ceil((err.retryMs || 1000) / 1000),
    when: err.limit ? i18n.when(err.limit) : "" };
  let key = `error.${err.code}`;
  if (err.code === "limit_reached" && err.reason) key = `error.limit_reached.${err.reason}`;
  if (!i18n.has(key)) key = "error.unknown";
  switch (err.code) {
    case "insufficient_funds":
      return say(key, vars, "error", state.config.dev_mode
        ? { label: "action.deposit", run: () => panels.openDeposit() }
        : { label: "action.smaller", run: backToBuilder });
    case "limit_reached":
    case "exclusion_in_force":
      return say(key, vars, "warn", { label: "action.limits", run: () => panels.openLimits() });
    case "wallet_unavailable":
      backToBuilder(); // its debit is spent: the ticket is built again
      return say(key, vars, "warn");
    case "rate_limited":
    case "busy":
    case "disconnected":
    case "maintenance":
      return say(key, vars, "warn");
    default:
      return say(key, vars, "error");
  }
}

export function setBalance(cents) {
  if (typeof cents !== "number") return;
  $("#balance").dataset.cents = cents;
  $("#balance").textContent = euros(cents);
}

// ---------- rules (figures from the server) ----------

export function loadRules() {
  state.rulesP ??= fetch("/api/rules").then((r) => r.json()).then((r) => {
    state.rules = r;
    renderPotential();
    return r;
  });
  return state.rulesP;
}

/** floor(stake × x) for a decimal figure x of the table, exactly. */
export function times(stake, x) {
  const [n, d] = ratio(x);
  return Number((BigInt(stake) * n) / d);
}

// ---------- ticket builder ----------

function buildGrid() {
  const g = $("#grid");
  g.replaceChildren();
  for (let n = 1; n <= state.config.grid; n++) {
    const b = el("button", { type: "button", textContent: n, className: "num", onclick: () => toggle(n) });
    b.dataset.n = n;
    g.append(b);
  }
  g.onkeydown = (e) => {
    const cols = getComputedStyle(g).gridTemplateColumns.split(" ").length; // 8, or 5 on a phone
    const step = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: cols, ArrowUp: -cols }[e.key];
    let n = state.focusN;
    if (step) n = Math.min(state.config.grid, Math.max(1, n + step));
    else if (e.key === "Home") n = 1;
    else if (e.key === "End") n = state.config.grid;
    else return;
    e.preventDefault();
    state.focusN = n;
    renderBuilder();
    g.querySelector(`[data-n="${n}"]`).focus();
  };
}

const currentGrid = () => state.grids[state.current];

function toggle(n) {
  if (state.playing) return;
  state.focusN = n;
  const picks = currentGrid().picks;
  if (picks.has(n)) picks.delete(n);
  else if (picks.size < state.config.max_picks) {
    picks.add(n);
    sound.play("color");
  } else say("builder.tooMany", { max: state.config.max_picks }, "warn");
  renderBuilder();
}

function renderStakes() {
  $("#stakes").replaceChildren(...state.config.stakes.map((s) => {
    const input = el("input", { type: "radio", name: "stake", value: s, id: `stake-${s}` });
    input.onchange = () => { currentGrid().stake = s; renderBuilder(); };
    return el("label", { className: "stake", htmlFor: `stake-${s}` }, input, " ", euros(s));
  }));
}

export function renderBuilder() {
  const g = currentGrid();
  const { max_picks: max, min_picks: min } = state.config;
  $("#grid").setAttribute("aria-label", t("builder.grid", { min, max }));
  for (const b of $("#grid").children) {
    const n = +b.dataset.n, on = g.picks.has(n);
    b.classList.toggle("on", on);
    b.setAttribute("aria-pressed", on);
    b.tabIndex = n === state.focusN ? 0 : -1;
    b.disabled = state.playing;
  }
  $("#grid-title").textContent = t("builder.title", { n: state.current + 1, of: state.grids.length });
  $("#pick-count").textContent = t("builder.count", { n: g.picks.size, max });
  $("#pick-count").setAttribute("aria-label", t("builder.countLabel", { n: g.picks.size, max }));
  for (const r of document.querySelectorAll('input[name="stake"]')) r.checked = +r.value === g.stake;
  const list = $("#grids");
  list.replaceChildren();
  state.grids.forEach((gr, i) => {
    const picks = gr.picks.size ? [...gr.picks].sort((a, b) => a - b).join(" ") : t("builder.empty");
    list.append(el("button", { type: "button", className: "grid-tab" + (i === state.current ? " current" : ""),
      textContent: t("builder.gridTab", { n: i + 1, picks, stake: euros(gr.stake) }), disabled: state.playing,
      onclick: () => { state.current = i; renderBuilder(); } }));
    list.lastChild.setAttribute("aria-current", i === state.current);
    if (state.grids.length > 1) {
      list.append(el("button", { type: "button", className: "remove", textContent: "×", disabled: state.playing,
        ariaLabel: t("builder.remove", { n: i + 1 }), title: t("builder.remove", { n: i + 1 }),
        onclick: () => { state.grids.splice(i, 1); state.current = Math.min(state.current, state.grids.length - 1); renderBuilder(); } }));
    }
  });
  for (const b of document.querySelectorAll("#builder select, #builder input, #btn-quick, #btn-clear, #btn-review, #btn-replay")) b.disabled = state.playing;
  $("#btn-add").disabled = state.grids.length >= state.config.max_grids || state.playing;
  renderPotential();
}

/** The prize table for the grid's pick count and stake, live as it changes. */
function renderPotential() {
  const box = $("#potential");
  const g = currentGrid();
  if (!box || !g) return;
  const p = g.picks.size;
  if (p < state.config.min_picks || !state.rules) {
    box.replaceChildren(el("p", { className: "hint", textContent: t("builder.pickMore", { min: state.config.min_picks }) }));
    return;
  }
  const row = state.rules.table.main[String(p)];
  const items = Object.keys(row).map(Number).sort((a, b) => b - a)
    .map((m) => el("li", { textContent: t("builder.potentialRow", { m, prize: euros(times(g.stake, row[m])) }) }));
  box.replaceChildren(el("h3", { textContent: t("builder.potential") }), el("ul", {}, ...items));
}

function quickPick() {
  const n = +$("#qp-count").value;
  const picks = new Set();
  const buf = new Uint32Array(1);
  while (picks.size < n) {
    crypto.getRandomValues(buf);
    picks.add(1 + (buf[0] % state.config.grid)); // display only: the server deals the game
  }
  currentGrid().picks = picks;
  renderBuilder();
}

async function review() {
  const grids = [];
  const { min_picks: min, max_picks: max, grid } = state.config;
  for (const [i, g] of state.grids.entries()) {
    if (validatePicks([...g.picks], { min, max, grid })) {
      state.current = i;
      renderBuilder();
      return say("builder.invalid", { n: i + 1, min, max }, "warn");
    }
    grids.push({ picks: [...g.picks].sort((a, b) => a - b), stake: g.stake });
  }
  try {
    showSummary(await unlessBusy(() => state.client.ticket(grids)));
  } catch (e) {
    explain(e);
  }
}

// unlessBusy runs request, and again after each "busy" refusal (the server
// keeps the games in play on time first; nothing was debited), saying so,
// a few times before giving up.
async function unlessBusy(request) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await request();
    } catch (e) {
      if (e?.code !== "busy" || attempt >= 5) throw e;
      const ms = e.retryMs || 2000;
      say("error.busy", { s: Math.ceil(ms / 1000) }, "warn");
      await new Promise((r) => setTimeout(r, ms));
    }
  }
}

export function showSummary(sum) {
  state.ticket = sum;
  renderSummary();
  $("#builder").hidden = true;
  $("#summary").hidden = false;
  $("#summary-title").focus(); // neither Back nor Confirm pre-selected
}

function renderSummary() {
  const sum = state.ticket;
  if (!sum) return;
  $("#summary-grids").replaceChildren(...sum.grids.map((g, i) => el("li", {
    textContent: t("summary.grid", { n: i + 1, picks: g.picks.join(" "), stake: euros(g.stake) }) + (g.quick ? t("summary.flash") : "") })));
  $("#summary-total").textContent = t("summary.total", { total: euros(sum.total) });
  $("#summary-warnings").replaceChildren(...(sum.warnings || []).map((w) => el("li", { textContent: w.replace(/^\w+: /, "") })));
}

export function backToBuilder() {
  state.ticket = null;
  $("#summary").hidden = true;
  $("#builder").hidden = false;
}

async function confirmTicket() {
  $("#btn-confirm").disabled = true;
  const total = state.ticket?.total ?? 0;
  try {
    const acc = await unlessBusy(() => state.client.confirm(state.ticket.ticket));
    setBalance(acc.balance);
    state.session.staked += total;
    state.ticketStake = total;
    state.stakes = [];
    state.playing = true;
    backToBuilder();
    renderBuilder();
    say("msg.accepted", { n: acc.games.length });
  } catch (e) {
    explain(e);
  } finally {
    $("#btn-confirm").disabled = false;
  }
}

async function replayLast() {
  try {
    showSummary(await state.client.replayLast());
  } catch (e) {
    explain(e);
  }
}

// ---------- the draw ----------

const slot = (pos) => $("#gauge").children[pos];
const cell = (n) => $("#board").children[n - 1];
const SYMBOLS = { gold: "★", red: "✕", green: "✚", blue: "" };

function onGameStart(m, replay = false) {
  state.g = { id: m.game, index: m.index ?? 0, of: m.of ?? 1, picks: m.picks, stake: m.stake, colors: [], numbers: [],
    hits: [], main: null, offer: null, socDraw: [], socResult: null, extra: null, settled: null, replay };
  if (!replay) {
    state.playing = true;
    state.stakes[m.index ?? 0] = m.stake;
    state.done = null;
  }
  document.body.classList.add("playing");
  renderBuilder();
  $("#play-picks").replaceChildren(...m.picks.map((n) => el("li", { className: "pick", textContent: n })));
  $("#gauge").replaceChildren(...Array.from({ length: 10 }, () => el("li", { className: "ball empty" })));
  $("#board").replaceChildren(...Array.from({ length: state.config.grid }, (_, i) =>
    el("span", { className: "cell" + (m.picks.includes(i + 1) ? " picked" : ""), textContent: i + 1 })));
  for (const id of ["#soc", "#soc-draw", "#extra", "#ticket-done"]) $(id).hidden = true;
  $("#soc-draw").replaceChildren();
  $("#confetti").replaceChildren();
  $("#settled").className = "settled";
  renderPlayTexts();
  // On a small screen the draw takes the screen: the gauge and the result
  // stay in view for the whole reveal.
  if (matchMedia("(max-width: 900px)").matches) $("#play").scrollIntoView({ block: "start", behavior: "instant" });
}

function onColor(m) {
  const g = state.g;
  g.colors[m.pos] = m.color;
  const s = slot(m.pos);
  s.className = `ball ${m.color}` + (reducedMotion.matches ? "" : " appear");
  s.dataset.color = m.color;
  s.replaceChildren(el("span", { className: "sym", textContent: SYMBOLS[m.color], ariaHidden: "true" }));
  if (m.color !== "blue") {
    sound.play("color");
    announce(t("say.color", { color: t(`ball.${m.color}`), n: m.pos + 1 }));
  }
  if (m.pos === 9) anticipate(0);
  renderBalls();
}

// The next ball to fall pulses when it is a mystery ball: the suspense of
// the game is in which number it will land on.
function anticipate(pos) {
  for (const b of $("#gauge").children) b.classList.remove("next");
  const g = state.g;
  if (pos < 10 && g.colors[pos] && g.colors[pos] !== "blue") {
    slot(pos).classList.add("next");
    sound.play("suspense");
  }
}

function onNumber(m) {
  const g = state.g;
  g.numbers[m.pos] = m.number;
  g.hits[m.pos] = !!m.hit;
  const s = slot(m.pos);
  s.append(el("span", { className: "n", textContent: m.number }));
  s.classList.add("numbered");
  s.classList.remove("next");
  if (m.hit) s.classList.add("hit");
  if (m.effect) s.append(el("span", { className: `effect ${m.effect}`, textContent: t(`effect.${m.effect}`) }));
  cell(m.number)?.classList.add("drawn", ...(m.hit ? ["hit"] : []));
  for (const p of $("#play-picks").children) if (+p.textContent === m.number) p.classList.add("hit");
  sound.play(m.effect === "gold" ? "gold" : m.effect === "red" ? "red" : m.hit ? "hit" : "ball");
  announce(t("say.number", { number: m.number, hit: m.hit ? t("say.hit") : "" }));
  anticipate(m.pos + 1);
  renderBalls();
}

function renderBalls() {
  const g = state.g;
  if (!g) return;
  [...$("#gauge").children].forEach((s, i) => {
    const color = g.colors[i] ? t(`ball.${g.colors[i]}`) : null;
    s.setAttribute("aria-label", !color ? t("ball.empty", { n: i + 1 })
      : g.numbers[i] ? t("ball.labelNumber", { n: i + 1, number: g.numbers[i], color, hit: g.hits[i] ? t("ball.hit") : "" })
        : t("ball.label", { n: i + 1, color }));
  });
}

function onMainResult(m) {
  state.g.main = m.main;
  anticipate(10);
  renderPlayTexts();
  announce($("#main-result").textContent);
}

function onSoCOffer(m) {
  state.g.offer = { gain: m.gain };
  renderPlayTexts();
  $("#soc").hidden = false;
  sound.play("offer");
  // Neither answer is pre-selected: focus goes to the question, so Enter
  // takes no risk; Tab reaches Stop, then Continue.
  $("#soc").focus();
  announce(`${t("soc.title")}. ${$("#soc-question").textContent}`);
}

async function chooseSoC(cont) {
  if ($("#soc").hidden || state.g?.replay) return;
  $("#soc").hidden = true;
  try {
    await state.client.choose(state.g.id, cont);
  } catch (e) {
    explain(e);
  }
}

function onSoCDraw(m) {
  state.g.socDraw.push(m.number);
  $("#soc-draw").hidden = false;
  $("#soc-draw").append(el("li", { className: "ball blue numbered" + (m.hit ? " hit" : "") + (reducedMotion.matches ? "" : " appear") },
    el("span", { className: "n", textContent: m.number })));
  cell(m.number)?.classList.add("drawn", "soc", ...(m.hit ? ["hit"] : []));
  sound.play(m.hit ? "hit" : "ball");
  announce(t("say.number", { number: m.number, hit: m.hit ? t("say.hit") : "" }));
}

function onSoCResult(m) {
  state.g.socResult = { hits: m.hits ?? 0, gain: m.gain ?? 0 }; // zero figures are omitted on the wire
  renderPlayTexts();
  announce($("#main-result").textContent);
}

function onExtraOffer() {
  state.g.extra = { offered: true };
  renderBoxes();
  $("#extra").hidden = false;
  sound.play("offer");
  $("#extra").focus();
}

function renderBoxes() {
  const x = state.g?.extra;
  if (!x) return;
  const boxes = $("#boxes");
  if (!x.boxes) {
    boxes.replaceChildren(...Array.from({ length: 5 }, (_, i) => el("button", { type: "button", className: "box",
      textContent: i + 1, ariaLabel: t("extra.box", { n: i + 1 }), onclick: () => openBox(i) })));
    return;
  }
  boxes.replaceChildren(...x.boxes.map((p, i) => el("div", { className: "box open" + (i === x.box ? " chosen" : ""),
    ariaLabel: t(i === x.box ? "extra.chosen" : "extra.opened", { n: i + 1, prize: euros(p) }), role: "img" },
  el("span", { className: "box-n", textContent: i + 1, ariaHidden: "true" }), el("span", { className: "box-p", textContent: euros(p), ariaHidden: "true" }))));
}

async function openBox(i) {
  if (state.g?.replay) return;
  for (const b of $("#boxes").children) b.disabled = true;
  try {
    await state.client.openBox(state.g.id, i);
  } catch (e) {
    explain(e);
  }
}

function onExtraResult(m) {
  state.g.extra = { offered: true, box: m.box, boxes: m.boxes, prize: m.prize ?? 0 };
  $("#extra").hidden = false;
  renderBoxes();
  announce(t("extra.chosen", { n: m.box + 1, prize: euros(m.prize ?? 0) }));
}

function onSettled(m) {
  const g = state.g;
  g.settled = { win: m.win ?? 0 };
  if (!g.replay) {
    setBalance(m.balance);
    state.session.won += g.settled.win;
  }
  renderPlayTexts();
  celebrate(g.settled.win, g.stake);
  announce($("#settled").textContent);
}

/** Celebrated in proportion to the win over the stake; a win below the stake is not one. */
function celebrate(win, stake) {
  const r = win / stake;
  const cls = r > 50 ? "big" : r > 5 ? "medium" : r > 1 ? "small" : r > 0 ? "partial" : "none";
  $("#settled").className = `settled ${cls}`;
  if (r > 1) sound.play("win", r); else sound.play("lose");
  if (r <= 1 || reducedMotion.matches) return;
  const n = r > 50 ? 90 : r > 5 ? 40 : 14;
  const box = $("#confetti");
  box.replaceChildren(...Array.from({ length: n }, (_, i) => {
    const c = el("i");
    c.style.setProperty("--x", `${(i * 37) % 100}%`);
    c.style.setProperty("--d", `${(i % 7) * 0.12}s`);
    c.style.setProperty("--h", `${(i * 47) % 360}`);
    return c;
  }));
  setTimeout(() => box.replaceChildren(), 2600);
}

function onTicketDone(m) {
  state.playing = false;
  state.done = { wins: m.wins || [], win: m.win ?? 0, stake: state.ticketStake };
  state.ticketStake = 0;
  setBalance(m.balance);
  renderBuilder();
  renderPlayTexts();
  $("#ticket-done").hidden = false;
  panels.realityAfterTicket();
}

/** Every text of the draw, from the game's state: re-run on a language switch. */
function renderPlayTexts() {
  const g = state.g;
  if (!g) return;
  $("#play-title").textContent = g.of > 1 ? t("play.game", { n: g.index + 1, of: g.of }) : t("play.single");
  $("#board").setAttribute("aria-label", t("play.board"));
  renderBalls();
  let text = "";
  if (g.main) {
    const r = g.main;
    const parts = [t("result.matches", { n: r.matches ?? 0 })];
    if (r.red) parts.push(t(r.green ? "result.redExtra" : "result.red"));
    else if (r.gain > 0) parts.push(t("result.gain", { gain: euros(r.gain) }) + (r.gold ? t("result.gold") : ""));
    else parts.push(t("result.none"));
    if (!r.red && r.green) parts.push(t("result.green"));
    text = parts.join(" — ");
  }
  if (g.socResult) {
    const s = g.socResult;
    text += " → " + (s.gain > 0 ? t("soc.result", { h: s.hits, gain: euros(s.gain) }) : t("soc.resultLost", { h: s.hits }));
  }
  $("#main-result").textContent = text;
  if (g.offer) renderOffer();
  for (const e of $("#gauge").querySelectorAll(".effect")) e.textContent = t(`effect.${[...e.classList][1]}`);
  renderBoxes();
  const st = $("#settled");
  if (!g.settled) st.textContent = "";
  else {
    const win = g.settled.win;
    st.textContent = win > g.stake ? t("settled.win", { win: euros(win) })
      : win === g.stake ? t("settled.refund", { win: euros(win) })
        : win > 0 ? t("settled.partial", { win: euros(win), stake: euros(g.stake) }) : t("settled.none");
    st.dataset.win = win;
  }
  if (state.done && !g.replay) {
    const d = state.done;
    $("#ticket-wins").replaceChildren(...d.wins.map((w, i) => el("li", { textContent: t("ticket.grid", { n: i + 1, win: euros(w) }) })));
    $("#ticket-total").textContent = d.stake ? t("ticket.total", { win: euros(d.win), stake: euros(d.stake) }) : t("ticket.totalOnly", { win: euros(d.win) });
  }
}

/** The Stop-or-Continue offer: the gain, and what Continue can pay. */
function renderOffer() {
  const g = state.g, gain = g.offer.gain, r = g.main?.remaining ?? 0;
  $("#soc-question").textContent = t("soc.question", { gain: euros(gain) });
  $("#soc-explain").textContent = t("soc.explain", { r });
  const mult = state.rules?.table.stop_or_continue.multiplier[String(r)] || {};
  $("#soc-table").replaceChildren(el("li", { textContent: t("soc.lose") }), ...Object.keys(mult).map(Number).sort()
    .map((h) => el("li", { textContent: t("soc.row", { h, x: String(mult[h]).replace(".", i18n.current() === "fr" ? "," : "."), gain: euros(times(gain, mult[h])) }) })));
  $("#btn-stop").textContent = t(g.main?.green && !g.main?.red ? "soc.stopExtra" : "soc.stop");
  $("#btn-continue").textContent = t("soc.continue");
}

/** Plays a stored game again, locally, at the live pace ("Revoir"). */
export function animate(d) {
  if (state.playing) return;
  const o = d.outcome, r = d.result;
  const steps = [];
  let at = 0;
  const push = (dt, f) => { at += dt; steps.push([at, f]); };
  const { color_ms: cms = 150, number_ms: nms = 400 } = state.config;
  push(0, () => onGameStart({ game: d.game, index: d.index, of: d.of, picks: o.picks, stake: o.stake }, true));
  o.colors.forEach((c, pos) => push(cms, () => onColor({ pos, color: c })));
  for (let pos = 0; pos < r.revealed; pos++) {
    const hit = r.hits[pos];
    push(nms, () => onNumber({ pos, number: o.numbers[pos], hit, effect: hit && o.colors[pos] !== "blue" ? o.colors[pos] : "" }));
  }
  push(nms, () => onMainResult({ main: r }));
  if (r.continued) {
    o.soc_draw.forEach((n) => push(500, () => onSoCDraw({ number: n, hit: o.picks.includes(n) })));
    push(300, () => onSoCResult({ hits: r.soc_hits, gain: r.soc_gain }));
  }
  if (r.box >= 0) push(400, () => onExtraResult({ box: r.box, boxes: o.boxes, prize: r.extra_win }));
  push(300, () => onSettled({ win: r.win }));
  for (const [ms, f] of steps) setTimeout(f, reducedMotion.matches ? 0 : ms);
}

// ---------- connection ----------

async function devToken(player) {
  const r = await fetch(`/api/dev/login?player=${encodeURIComponent(player)}`, { method: "POST" });
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new KenoError({ code: body.code || "unknown", message: body.message || r.statusText });
  return body.token;
}

async function start(token) {
  const wsURL = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`;
  const c = new KenoClient(wsURL, { token });
  state.client = c;
  const on = (type, f) => c.addEventListener(type, (e) => f(e.detail));
  on("state", (s) => {
    $("#conn").dataset.state = s;
    $("#conn").textContent = t(`conn.${s}`);
    if (s === "reconnecting") say("msg.reconnecting", {}, "warn");
    if (s === "open" && state.playing && !c.welcome.games?.length) {
      // Back online and nothing to resume: the game ended while away.
      setBalance(c.welcome.balance);
      state.playing = false;
      renderBuilder();
      say("msg.finishedAway");
    }
  });
  on("game_start", (m) => onGameStart(m));
  on("color", onColor);
  on("number", onNumber);
  on("main_result", onMainResult);
  on("soc_offer", onSoCOffer);
  on("soc_draw", onSoCDraw);
  on("soc_result", onSoCResult);
  on("extra_offer", onExtraOffer);
  on("extra_result", onExtraResult);
  on("settled", onSettled);
  on("ticket_done", onTicketDone);
  on("resume", () => { state.playing = true; renderBuilder(); say("msg.resume"); });
  on("error", (m) => explain(new KenoError(m.error)));
  on("session_taken_over", () => say("error.session_taken_over", {}, "warn"));
  on("server_shutdown", () => say("error.server_draining", {}, "warn"));
  on("notice", (m) => say("msg.notice", { text: m.text }, "warn"));
  const w = await c.connect();
  state.player = w.player;
  state.config = { ...state.config, ...w.config };
  state.session = { start: Date.now(), staked: 0, won: 0 };
  $("#btn-deposit").hidden = !state.config.dev_mode;
  $("#btn-history").disabled = $("#btn-limits").disabled = false;
  state.grids = [{ picks: new Set(), stake: state.config.default_stake }];
  setBalance(w.balance);
  $("#login").hidden = true;
  $("#game").hidden = false;
  buildGrid();
  renderStakes();
  renderBuilder();
  say(state.config.not_durable ? "msg.notDurable" : "msg.welcome", { player: w.player, min: state.config.min_picks, max: state.config.max_picks },
    state.config.not_durable ? "warn" : "info");
  panels.startReality();
  $("#grid").querySelector('[tabindex="0"]').focus(); // focus stays in the game after login
  performance.mark("keno-interactive"); // the grid takes picks from here (measured by the browser test)
}

async function login(e) {
  e.preventDefault();
  sound.unlock();
  const name = $("#login-name").value.trim();
  $("#login-error").textContent = "";
  try {
    const token = await devToken(name);
    localStorage.setItem("keno-player", name);
    sessionStorage.setItem("keno-token", token);
    await start(token);
  } catch (err) {
    // The server's reason, in the player's words, next to the field.
    const key = i18n.has(`error.${err.code}`) ? `error.${err.code}` : "error.unknown";
    $("#login-error").textContent = t(key, { message: err.message });
    $("#login-name").setAttribute("aria-invalid", "true");
    $("#login-name").focus();
  }
}

async function switchLang() {
  await i18n.use(i18n.current() === "fr" ? "en" : "fr");
  renderAll();
}

function renderSound() {
  const m = sound.isMuted();
  $("#btn-sound").classList.toggle("muted", m);
  $("#btn-sound").setAttribute("aria-label", t(m ? "sound.off" : "sound.on"));
  $("#btn-sound").setAttribute("aria-pressed", String(!m));
}

/** Everything drawn from the language table, again. */
function renderAll() {
  announce(""); // what was announced stays said; nothing old in the new language
  renderSound();
  $("#conn").textContent = t(`conn.${$("#conn").dataset.state}`);
  if ($("#balance").dataset.cents) setBalance(+$("#balance").dataset.cents);
  if (state.client) {
    renderStakes();
    renderBuilder();
    renderSummary();
    renderPlayTexts();
  }
  if (lastSaid) say(lastSaid.key, lastSaid.vars, lastSaid.kind, lastSaid.action);
  panels.rerender();
}

function wire() {
  $("#btn-quick").onclick = quickPick;
  $("#btn-clear").onclick = () => { currentGrid().picks.clear(); renderBuilder(); };
  $("#btn-add").onclick = () => {
    state.grids.push({ picks: new Set(), stake: currentGrid().stake });
    state.current = state.grids.length - 1;
    renderBuilder();
  };
  $("#btn-review").onclick = review;
  $("#btn-back").onclick = backToBuilder;
  $("#btn-confirm").onclick = confirmTicket;
  $("#btn-replay").onclick = replayLast;
  $("#btn-stop").onclick = () => chooseSoC(false);
  $("#btn-continue").onclick = () => chooseSoC(true);
  $("#btn-new").onclick = () => {
    $("#ticket-done").hidden = true;
    document.body.classList.remove("playing");
    $("#builder").scrollIntoView({ block: "start", behavior: "instant" });
    $("#grid").querySelector('[tabindex="0"]')?.focus();
  };
  $("#btn-lang").onclick = switchLang;
  $("#btn-sound").onclick = () => { sound.unlock(); sound.setMuted(!sound.isMuted()); renderSound(); };
  $("#login-form").onsubmit = login;
  document.addEventListener("pointerdown", sound.unlock, { once: true });
  document.addEventListener("keydown", (e) => {
    sound.unlock();
    if (e.target.tagName === "INPUT" || e.target.tagName === "SELECT" || document.querySelector("dialog[open]") || e.ctrlKey || e.metaKey || e.altKey) return;
    const k = e.key.toLowerCase();
    if (!$("#soc").hidden && k === t("soc.stopKey")) chooseSoC(false);
    if (!$("#soc").hidden && k === t("soc.continueKey")) chooseSoC(true);
    if (!$("#extra").hidden && e.key >= "1" && e.key <= "5" && state.g?.extra && !state.g.extra.boxes) openBox(+e.key - 1);
  });
  panels.wire();
}

async function boot() {
  await i18n.use(i18n.preferred());
  wire();
  renderSound();
  $("#conn").textContent = t("conn.closed");
  loadRules().catch(() => {}); // the rules screen and the prize tables; not needed to start
  // The operator's site passes the token in the fragment (never sent to a
  // server); it leaves the address bar at once and stays with this tab only,
  // so a reload resumes the game.
  const fromHash = new URLSearchParams(location.hash.slice(1)).get("token");
  if (fromHash) {
    sessionStorage.setItem("keno-token", fromHash);
    history.replaceState(null, "", location.pathname);
  }
  const token = sessionStorage.getItem("keno-token");
  if (token) {
    return start(token).catch((e) => {
      sessionStorage.removeItem("keno-token");
      $("#login").hidden = false;
      explain(e);
    });
  }
  $("#login").hidden = false;
  $("#login-name").value = localStorage.getItem("keno-player") || "";
  $("#login-name").focus();
}

boot();
