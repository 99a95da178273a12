// The Keno Mystères game page, built on keno-protocol.js.
import { KenoClient, KenoError, euros, validatePicks } from "./keno-protocol.js";

const $ = (sel) => document.querySelector(sel);
const el = (tag, props = {}, ...children) => {
  const e = Object.assign(document.createElement(tag), props);
  e.append(...children);
  return e;
};

const state = {
  client: null,
  config: { min_picks: 3, max_picks: 8, grid: 40, max_grids: 5, stakes: [50, 100, 200], default_stake: 100 },
  grids: [{ picks: new Set(), stake: 100 }],
  current: 0,
  ticket: null, // id under review
  playing: false,
  game: null, // game in play
  historyCursor: 0,
};

// ---------- messages ----------

function say(text, kind = "info", action = null) {
  const m = $("#message");
  m.replaceChildren(el("span", { textContent: text }));
  if (action) m.append(" ", el("button", { type: "button", textContent: action.label, onclick: action.run }));
  m.dataset.kind = kind;
}

function explain(err) {
  if (!(err instanceof KenoError)) return say(String(err), "error");
  switch (err.code) {
    case "insufficient_funds":
      return say(err.message, "error", state.config.dev_mode
        ? { label: "Deposit", run: () => $("#deposit-dialog").showModal() }
        : { label: "Smaller ticket", run: backToBuilder });
    case "limit_reached":
      return say(err.message, "warn", { label: "My limits", run: openLimits });
    case "rate_limited":
      return say(`Slow down: try again in ${Math.ceil((err.retryMs || 1000) / 1000)} s.`, "warn");
    case "disconnected":
      return say("Connection lost — reconnecting; your game is safe and will resume.", "warn");
    default:
      return say(err.message || err.code, "error");
  }
}

function setBalance(cents) {
  if (typeof cents === "number") $("#balance").textContent = euros(cents);
  $("#balance").dataset.cents = cents;
}

// ---------- ticket builder ----------

function buildGrid() {
  const g = $("#grid");
  g.replaceChildren();
  for (let n = 1; n <= state.config.grid; n++) {
    g.append(el("button", { type: "button", textContent: n, className: "num", onclick: () => toggle(n) },));
    g.lastChild.dataset.n = n;
  }
}

function currentGrid() { return state.grids[state.current]; }

function toggle(n) {
  if (state.playing) return;
  const picks = currentGrid().picks;
  if (picks.has(n)) picks.delete(n);
  else if (picks.size < state.config.max_picks) picks.add(n);
  else say(`At most ${state.config.max_picks} numbers per grid.`, "warn");
  renderBuilder();
}

function renderBuilder() {
  const g = currentGrid();
  for (const b of $("#grid").children) {
    const on = g.picks.has(+b.dataset.n);
    b.classList.toggle("on", on);
    b.setAttribute("aria-pressed", on);
  }
  $("#pick-count").textContent = `${g.picks.size} / ${state.config.max_picks}`;
  $("#grid-no").textContent = state.current + 1;
  $("#grid-count").textContent = state.grids.length;
  for (const r of document.querySelectorAll('input[name="stake"]')) r.checked = +r.value === g.stake;
  const list = $("#grids");
  list.replaceChildren();
  state.grids.forEach((gr, i) => {
    const label = gr.picks.size ? [...gr.picks].sort((a, b) => a - b).join(" ") : "empty";
    const b = el("button", { type: "button", className: "grid-tab" + (i === state.current ? " current" : ""),
      textContent: `${i + 1}: ${label} · ${euros(gr.stake)}`, onclick: () => { state.current = i; renderBuilder(); } });
    list.append(b);
    if (state.grids.length > 1) {
      list.append(el("button", { type: "button", className: "remove", textContent: "×", title: `Remove grid ${i + 1}`,
        onclick: () => { state.grids.splice(i, 1); state.current = Math.min(state.current, state.grids.length - 1); renderBuilder(); } }));
    }
  });
  $("#btn-add").disabled = state.grids.length >= state.config.max_grids || state.playing;
  for (const b of document.querySelectorAll("#builder button, #builder input, #builder select")) {
    if (b.id !== "btn-add") b.disabled = state.playing;
  }
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
  for (const [i, g] of state.grids.entries()) {
    const err = validatePicks([...g.picks], { min: state.config.min_picks, max: state.config.max_picks, grid: state.config.grid });
    if (err) {
      state.current = i;
      renderBuilder();
      return say(`Grid ${i + 1}: ${err}.`, "warn");
    }
    grids.push({ picks: [...g.picks].sort((a, b) => a - b), stake: g.stake });
  }
  try {
    showSummary(await state.client.ticket(grids));
  } catch (e) {
    explain(e);
  }
}

function showSummary(sum) {
  state.ticket = sum.ticket;
  $("#summary-grids").replaceChildren(...sum.grids.map((g) =>
    el("li", { textContent: `${g.picks.join(" ")} — ${euros(g.stake)}${g.quick ? " (quick pick)" : ""}` })));
  $("#summary-total").textContent = euros(sum.total);
  $("#summary-warnings").replaceChildren(...(sum.warnings || []).map((w) => el("li", { textContent: w.replace(/^\w+: /, "") })));
  if (typeof sum.balance === "number") setBalance(sum.balance);
  $("#builder").hidden = true;
  $("#summary").hidden = false;
  $("#btn-confirm").focus();
}

function backToBuilder() {
  state.ticket = null;
  $("#summary").hidden = true;
  $("#builder").hidden = false;
}

async function confirmTicket() {
  $("#btn-confirm").disabled = true;
  try {
    const acc = await state.client.confirm(state.ticket);
    setBalance(acc.balance);
    state.playing = true;
    backToBuilder();
    renderBuilder();
    say(`Ticket accepted: ${acc.games.length} game${acc.games.length > 1 ? "s" : ""}. Good luck!`);
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

function slot(pos) { return $("#gauge").children[pos]; }

function onGameStart(m) {
  state.game = m.game;
  state.playing = true;
  renderBuilder();
  $("#play-title").textContent = m.of > 1 ? `Game ${m.index + 1} of ${m.of}` : "Your game";
  $("#play-picks").replaceChildren(...m.picks.map((n) => el("span", { className: "pick", textContent: n })));
  $("#play-picks").dataset.picks = m.picks.join(",");
  const gauge = $("#gauge");
  gauge.replaceChildren();
  for (let i = 0; i < 10; i++) gauge.append(el("li", { className: "ball empty" }));
  for (const id of ["#soc", "#soc-draw", "#extra"]) $(id).hidden = true;
  $("#soc-draw").replaceChildren();
  $("#main-result").textContent = "";
  $("#settled").textContent = "";
}

function onColor(m) {
  const s = slot(m.pos);
  s.className = `ball ${m.color} appear`;
  s.dataset.color = m.color;
}

const effectText = { gold: "×2", red: "lost", green: "EXTRA" };

function onNumber(m) {
  const s = slot(m.pos);
  s.replaceChildren(el("span", { className: "n", textContent: m.number }));
  s.classList.add("numbered");
  if (m.hit) s.classList.add("hit");
  if (m.effect) s.append(el("span", { className: `effect ${m.effect}`, textContent: effectText[m.effect] }));
  for (const p of $("#play-picks").children) if (+p.textContent === m.number) p.classList.add("hit");
}

function onMainResult(m) {
  const r = m.main;
  const matches = r.matches ?? 0;
  let text = `${matches} match${matches === 1 ? "" : "es"}`;
  if (r.red) text += r.green ? " — red ball: gain lost, but Extra is yours" : " — red ball: gain lost, game over";
  else if (r.gain > 0) text += ` — gain ${euros(r.gain)}${r.gold ? " (gold ×2!)" : ""}`;
  else text += " — no gain";
  if (!r.red && r.green) text += " — green: Extra unlocked";
  $("#main-result").textContent = text;
}

function onSoCOffer(m) {
  $("#soc-gain").textContent = euros(m.gain);
  $("#soc").hidden = false;
  $("#btn-continue").focus();
}

async function chooseSoC(cont) {
  if ($("#soc").hidden) return;
  $("#soc").hidden = true;
  try {
    await state.client.choose(state.game, cont);
  } catch (e) {
    explain(e);
  }
}

function onSoCDraw(m) {
  const list = $("#soc-draw");
  list.hidden = false;
  list.append(el("li", { className: "ball numbered appear" + (m.hit ? " hit" : ""), textContent: m.number }));
}

function onSoCResult(m) {
  const hits = m.hits ?? 0, gain = m.gain ?? 0; // zero figures are omitted on the wire
  $("#main-result").textContent += ` → Stop-or-Continue: ${hits} hit${hits === 1 ? "" : "s"}, ${gain > 0 ? "gain " + euros(gain) : "all lost"}`;
}

function onExtraOffer() {
  const boxes = $("#boxes");
  boxes.replaceChildren();
  for (let i = 0; i < 5; i++) {
    boxes.append(el("button", { type: "button", className: "box", textContent: `${i + 1}`, onclick: () => openBox(i) }));
  }
  $("#extra").hidden = false;
  boxes.firstChild.focus();
}

async function openBox(i) {
  for (const b of $("#boxes").children) b.disabled = true;
  try {
    await state.client.openBox(state.game, i);
  } catch (e) {
    explain(e);
  }
}

function onExtraResult(m) {
  $("#extra").hidden = false;
  const boxes = $("#boxes");
  boxes.replaceChildren(...m.boxes.map((p, i) => el("button", { type: "button", disabled: true,
    className: "box open" + (i === m.box ? " chosen" : ""), textContent: euros(p) })));
}

function onSettled(m) {
  const win = m.win ?? 0;
  $("#settled").textContent = win > 0 ? `You win ${euros(win)}!` : "No win this time.";
  $("#settled").dataset.win = win;
  setBalance(m.balance);
}

function onTicketDone(m) {
  state.playing = false;
  state.game = null;
  setBalance(m.balance);
  renderBuilder();
  say((m.win ?? 0) > 0 ? `Ticket over: you won ${euros(m.win)} in total.` : "Ticket over.");
}

// ---------- history, limits, deposit ----------

async function openHistory(more = false) {
  if (!more) {
    state.historyCursor = 0;
    $("#history-rows").replaceChildren();
  }
  try {
    const h = await state.client.history(state.historyCursor, 20);
    for (const g of h.history) {
      $("#history-rows").append(el("tr", {},
        el("td", { textContent: new Date(g.created).toLocaleString() }),
        el("td", { textContent: g.picks.join(" ") }),
        el("td", { textContent: euros(g.stake) }),
        el("td", { textContent: g.status === "settled" ? euros(g.win ?? 0) : "in play" }),
        el("td", {}, el("button", { type: "button", textContent: "Replay", onclick: async () => {
          $("#history-dialog").close();
          try { showSummary(await state.client.replay(g.game)); } catch (e) { explain(e); }
        } }))));
    }
    state.historyCursor = h.next || 0;
    $("#history-more").disabled = h.history.length < 20;
    if (!$("#history-dialog").open) $("#history-dialog").showModal();
  } catch (e) {
    explain(e);
  }
}

async function openLimits() {
  try {
    const b = await state.client.balance();
    const l = b.limits;
    $("#limits-text").textContent = `Deposit cap ${euros(l.deposit_cap)} a week (${euros(l.deposited_week)} used)` +
      (l.deposit_cap_pending ? `, rising to ${euros(l.deposit_cap_pending)} on ${new Date(l.deposit_cap_pending_at).toLocaleDateString()}` : "") +
      `. Loss limit: ${l.loss_limit < 0 ? "none" : euros(l.loss_limit) + " a day (" + euros(Math.max(0, l.lost_today)) + " lost today)"}.` +
      (l.excluded_until > Date.now() ? ` Excluded until ${new Date(l.excluded_until).toLocaleString()}.` : "");
    $("#lim-cap").value = l.deposit_cap / 100;
    $("#lim-loss").value = l.loss_limit < 0 ? "" : l.loss_limit / 100;
    // A running self-exclusion can be neither shortened nor extended: the
    // field is emptied and locked, so saving the form again leaves it alone.
    $("#lim-excl").value = 0;
    $("#lim-excl").disabled = l.excluded_until > Date.now();
    if (!$("#limits-dialog").open) $("#limits-dialog").showModal();
  } catch (e) {
    explain(e);
  }
}

async function saveLimits(ev) {
  ev.preventDefault();
  try {
    if ($("#lim-cap").value !== "") await state.client.setLimit("deposit_cap", Math.round(+$("#lim-cap").value * 100));
    if ($("#lim-loss").value !== "") await state.client.setLimit("loss_limit", Math.round(+$("#lim-loss").value * 100));
    const days = +$("#lim-excl").value;
    if (days > 0 && !$("#lim-excl").disabled) await state.client.setLimit("excluded_until", Date.now() + days * 86400000);
    await openLimits();
    say("Limits saved.");
  } catch (e) {
    explain(e);
  }
}

async function deposit(ev) {
  ev.preventDefault();
  try {
    const b = await state.client.deposit(Math.round(+$("#dep-amount").value * 100), crypto.randomUUID());
    setBalance(b.balance);
    $("#deposit-dialog").close();
    say(`Deposit done: balance ${euros(b.balance)}.`);
  } catch (e) {
    explain(e);
  }
}

// ---------- connection ----------

async function token(player) {
  const fromHash = new URLSearchParams(location.hash.slice(1)).get("token");
  if (fromHash) return fromHash;
  const r = await fetch(`/api/dev/login?player=${encodeURIComponent(player)}`, { method: "POST" });
  if (!r.ok) throw new Error(await r.text());
  return (await r.json()).token;
}

async function start(player) {
  const wsURL = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`;
  const c = new KenoClient(wsURL, { getToken: () => token(player) });
  state.client = c;
  const on = (t, f) => c.addEventListener(t, (e) => f(e.detail));
  on("state", (s) => {
    $("#conn").dataset.state = s;
    $("#conn").textContent = { open: "online", connecting: "connecting…", reconnecting: "reconnecting…", closed: "offline" }[s];
    if (s === "reconnecting") say("Connection lost — reconnecting; your game is safe and will resume.", "warn");
    if (s === "open" && state.playing) {
      // Back online: an unfinished game is resumed at once; if none comes,
      // the game ended while we were away (its result is in the history).
      setBalance(c.welcome.balance);
      setTimeout(() => {
        if (state.playing && !state.resumed) {
          onTicketDone({ balance: c.welcome.balance, win: 0 });
          say("Your game finished while you were away — see History for its result.");
        }
        state.resumed = false;
      }, 1500);
    }
  });
  on("game_start", onGameStart);
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
  on("resume", () => { state.playing = true; state.resumed = true; renderBuilder(); say("Resuming your game…"); });
  on("error", (m) => explain(new KenoError(m.error)));
  on("session_taken_over", (m) => say(m.text, "warn"));
  on("server_shutdown", (m) => say(m.text, "warn"));
  const w = await c.connect();
  state.config = { ...state.config, ...w.config };
  $("#btn-deposit").hidden = !state.config.dev_mode;
  state.grids = [{ picks: new Set(), stake: state.config.default_stake }];
  setBalance(w.balance);
  $("#login").hidden = true;
  $("#game").hidden = false;
  buildGrid();
  renderBuilder();
  say(`Welcome ${w.player}. Pick ${state.config.min_picks} to ${state.config.max_picks} numbers, or use quick pick.`);
}

function wire() {
  $("#btn-quick").onclick = quickPick;
  $("#btn-clear").onclick = () => { currentGrid().picks.clear(); renderBuilder(); };
  $("#btn-add").onclick = () => {
    state.grids.push({ picks: new Set(), stake: currentGrid().stake });
    state.current = state.grids.length - 1;
    renderBuilder();
  };
  for (const r of document.querySelectorAll('input[name="stake"]')) r.onchange = () => { currentGrid().stake = +r.value; renderBuilder(); };
  $("#btn-review").onclick = review;
  $("#btn-back").onclick = backToBuilder;
  $("#btn-confirm").onclick = confirmTicket;
  $("#btn-replay").onclick = replayLast;
  $("#btn-stop").onclick = () => chooseSoC(false);
  $("#btn-continue").onclick = () => chooseSoC(true);
  $("#btn-history").onclick = () => openHistory(false);
  $("#history-more").onclick = () => openHistory(true);
  $("#history-close").onclick = () => $("#history-dialog").close();
  $("#btn-limits").onclick = openLimits;
  $("#limits-form").onsubmit = saveLimits;
  $("#limits-close").onclick = () => $("#limits-dialog").close();
  $("#btn-deposit").onclick = () => $("#deposit-dialog").showModal();
  $("#deposit-form").onsubmit = deposit;
  $("#deposit-close").onclick = () => $("#deposit-dialog").close();
  document.addEventListener("keydown", (e) => {
    if (e.target.tagName === "INPUT" || document.querySelector("dialog[open]")) return;
    if (!$("#soc").hidden && (e.key === "s" || e.key === "S")) chooseSoC(false);
    if (!$("#soc").hidden && (e.key === "c" || e.key === "C")) chooseSoC(true);
    if (!$("#extra").hidden && e.key >= "1" && e.key <= "5") openBox(+e.key - 1);
  });
  $("#login-form").onsubmit = async (e) => {
    e.preventDefault();
    const name = $("#login-name").value;
    localStorage.setItem("keno-player", name);
    try { await start(name); } catch (err) { explain(err); }
  };
}

wire();
if (new URLSearchParams(location.hash.slice(1)).get("token")) {
  start("").catch(explain);
} else {
  $("#login").hidden = false;
  $("#login-name").value = localStorage.getItem("keno-player") || "";
  $("#login-name").focus();
}
