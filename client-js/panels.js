// The game page's dialogs: rules and prize tables (from the server's own
// table and exact PAR), history with each game's detail, animated replay
// and in-browser verification, limits with a confirmation step, deposit
// (dev), and the reality check.
import { $, el, state, say, explain, setBalance, showSummary, animate, loadRules, times } from "./app.js";
import * as i18n from "./i18n.js";
import { t, euros } from "./i18n.js";
import { verifyGame } from "./fair.js";

const open = (d) => { if (!d.open) d.showModal(); };
const table = (head, rows) => el("table", {},
  el("thead", {}, el("tr", {}, ...head.map((h) => el("th", { scope: "col", textContent: h })))),
  el("tbody", {}, ...rows.map((r) => el("tr", {}, ...r.map((c, i) => (i ? el("td", { textContent: c }) : el("th", { scope: "row", textContent: c })))))));

// ---------- rules ----------

const rulesView = { picks: 0, stake: 0 };

export async function openRules() {
  const g = state.grids[state.current];
  rulesView.picks = g && g.picks.size >= state.config.min_picks ? g.picks.size : 6;
  rulesView.stake = g?.stake || state.config.default_stake;
  open($("#rules-dialog"));
  try {
    await loadRules();
    renderRules();
  } catch (e) {
    explain(e);
  }
}

function renderRules() {
  const r = state.rules;
  if (!r || !$("#rules-dialog").open) return;
  const { picks: p, stake } = rulesView;
  const tab = r.table;
  const sheet = (pp) => r.par.sheets.find((s) => s.picks === pp && s.stake_cents === stake);
  const sh = sheet(p);
  const choose = (id, label, values, value, fmt, set) => {
    const s = el("select", { id }, ...values.map((v) => el("option", { value: v, textContent: fmt(v), selected: v === value })));
    s.onchange = () => { set(+s.value); renderRules(); $(`#${id}`).focus(); };
    return [el("label", { htmlFor: id, textContent: label }), s];
  };
  const picksRange = Array.from({ length: tab.picks.max - tab.picks.min + 1 }, (_, i) => tab.picks.min + i);
  const main = tab.main[String(p)];
  const mainRows = Object.keys(main).map(Number).sort((a, b) => b - a).map((m) => {
    const pm = +sh.p_match[m].decimal;
    return [String(m), euros(times(stake, main[m])), t("rules.oneIn", { n: i18n.num(1 / pm) })];
  });
  const socMult = tab.stop_or_continue.multiplier;
  const socRows = Object.keys(socMult).map((rem) => [rem, ...[1, 2, 3].map((h) => socMult[rem][h] ? `×${i18n.num(socMult[rem][h])}` : "—")]);
  const extra = tab.extra;
  const extraRows = extra.prizes_x_stake[String(p)].map((x, i) => [euros(times(stake, x)), i18n.pct(extra.probabilities[i])]);
  const rtpRows = picksRange.map((pp) => {
    const s = sheet(pp);
    return [String(pp), i18n.pct(+s.rtp_stop.decimal), i18n.pct(+s.rtp_continue.decimal), i18n.pct(+s.p_win.decimal), euros(s.max_win_cents)];
  });
  $("#rules-body").replaceChildren(
    el("section", {}, el("h3", { textContent: t("rules.how") }),
      el("p", { textContent: t("rules.howText", { min: tab.picks.min, max: tab.picks.max, grids: state.config.max_grids }) })),
    el("div", { className: "row" },
      ...choose("rules-picks", t("rules.picks"), picksRange, p, String, (v) => { rulesView.picks = v; }),
      ...choose("rules-stake", t("builder.stake"), tab.stakes_cents, stake, euros, (v) => { rulesView.stake = v; })),
    el("section", {}, el("h3", { textContent: t("rules.main") }),
      el("p", { className: "hint", textContent: t("rules.mainFor", { p, stake: euros(stake) }) }),
      table([t("rules.matches"), t("rules.prize"), t("rules.odds")], mainRows)),
    el("section", {}, el("h3", { textContent: t("rules.mystery") }),
      el("p", { textContent: t("rules.mysteryText") }),
      el("ul", { className: "mystery" }, ...["gold", "red", "green"].map((c) =>
        el("li", {}, el("span", { className: `ball mini ${c}`, ariaHidden: "true", textContent: { gold: "★", red: "✕", green: "✚" }[c] }), " ",
          t(`rules.${c}`, { p: i18n.pct(tab.mystery[c]) }))))),
    el("section", {}, el("h3", { textContent: t("rules.soc") }),
      el("p", { textContent: t("rules.socText", { min: i18n.num(tab.stop_or_continue.eligible_gain_x_stake.min), max: i18n.num(tab.stop_or_continue.eligible_gain_x_stake.max) }) }),
      table([t("rules.socRemaining"), ...[1, 2, 3].map((h) => t("rules.socHits", { h }))], socRows)),
    el("section", {}, el("h3", { textContent: t("rules.extra") }),
      el("p", { textContent: t("rules.extraText", { p, stake: euros(stake) }) }),
      table([t("rules.extraPrize"), t("rules.extraChance")], extraRows)),
    el("section", {}, el("h3", { textContent: t("rules.rtp") }),
      el("p", { className: "hint", textContent: t("rules.rtpText", { stake: euros(stake) }) }),
      table([t("rules.picks"), t("rules.rtpStop"), t("rules.rtpContinue"), t("rules.pWin"), t("rules.maxWin")], rtpRows)),
  );
}

// ---------- history, detail, replay, verify ----------

let cursor = 0;
let detail = null;

export async function openHistory(more = false) {
  if (!state.client) return;
  if (!more) {
    cursor = 0;
    $("#history-rows").replaceChildren();
  }
  try {
    const h = await state.client.history(cursor, 20);
    for (const g of h.history || []) {
      const when = i18n.when(g.created);
      $("#history-rows").append(el("tr", {},
        el("td", { textContent: when }),
        el("td", { textContent: g.picks.join(" ") }),
        el("td", { textContent: euros(g.stake) }),
        el("td", { textContent: g.status === "settled" ? euros(g.win ?? 0) : t("history.inPlay") }),
        el("td", { className: "actions" },
          el("button", { type: "button", textContent: t("history.detail"), ariaLabel: t("history.detailOf", { when }), onclick: () => openDetail(g.game) }),
          el("button", { type: "button", textContent: t("history.replay"), ariaLabel: t("history.replayOf", { when }), onclick: () => replayBet(g.game) }))));
    }
    cursor = h.next || 0;
    $("#history-empty").hidden = $("#history-rows").children.length > 0;
    $("#history-more").hidden = (h.history || []).length < 20;
    open($("#history-dialog"));
  } catch (e) {
    explain(e);
  }
}

async function replayBet(game) {
  for (const d of document.querySelectorAll("dialog[open]")) d.close();
  try { showSummary(await state.client.replay(game)); } catch (e) { explain(e); }
}

async function openDetail(game) {
  try {
    detail = (await state.client.game(game)).detail;
    renderDetail();
    open($("#detail-dialog"));
    $("#detail-title").focus();
  } catch (e) {
    explain(e);
  }
}

function renderDetail() {
  const d = detail;
  if (!d) return;
  const o = d.outcome, r = d.result;
  const settled = d.status === "settled" && r;
  const balls = settled ? o.numbers.slice(0, r.revealed).map((n, i) => el("li", {
    className: `ball mini ${o.colors[i]}${r.hits[i] ? " hit" : ""}`, textContent: n,
    ariaLabel: t("ball.labelNumber", { n: i + 1, number: n, color: t(`ball.${o.colors[i]}`), hit: r.hits[i] ? t("ball.hit") : "" }) })) : [];
  const soc = !settled ? t("history.inPlay") : !r.soc ? t("detail.notOffered") : t(r.continued ? "detail.continued" : "detail.stopped");
  $("#detail-body").replaceChildren(
    el("p", { textContent: `${i18n.when(d.created)} — ${t("detail.picks", { picks: o.picks.join(" ") })} — ${t("detail.stake", { stake: euros(o.stake) })}` }),
    ...(settled ? [
      el("h3", { textContent: t("detail.drawn") }), el("ol", { className: "balls" }, ...balls),
      el("p", { textContent: t("result.matches", { n: r.matches }) }),
      el("p", { textContent: t("detail.soc", { choice: soc }) + (r.continued ? ` — ${t("detail.socDraw", { numbers: o.soc_draw.join(" ") })}` : "") }),
      ...(r.box >= 0 ? [el("p", { textContent: `${t("detail.boxes", { boxes: o.boxes.map(euros).join(" · ") })} — ${t("detail.boxChosen", { n: r.box + 1 })}` })] : []),
      el("p", { className: "strong", textContent: t("detail.win", { win: euros(d.win ?? 0) }) }),
    ] : [el("p", { textContent: t("history.inPlay") })]),
    el("p", { className: "hint mono", textContent: t("detail.fair", { commit: d.fair.commit, client: d.fair.client_seed, nonce: d.fair.nonce }) }),
  );
  $("#detail-animate").disabled = $("#detail-verify").disabled = !settled || state.playing;
}

function openVerify() {
  const d = detail;
  $("#verify-inputs").textContent = t("detail.fair", { commit: d.fair.commit, client: d.fair.client_seed, nonce: d.fair.nonce });
  $("#verify-seed").value = d.fair.server_seed || "";
  $("#verify-unrevealed").hidden = $("#verify-rotate").hidden = !!d.fair.server_seed;
  $("#verify-result").textContent = $("#verify-computed").textContent = "";
  delete $("#verify-result").dataset.verdict;
  open($("#verify-dialog"));
  $("#verify-seed").focus();
}

async function runVerify(e) {
  e.preventDefault();
  const res = $("#verify-result");
  try {
    const rules = await loadRules();
    const v = await verifyGame(detail, $("#verify-seed").value, rules.table);
    res.dataset.verdict = v.verdict;
    res.textContent = v.verdict === "ok" ? t("verify.ok") : v.verdict === "bad_seed" ? t("verify.badSeed")
      : v.verdict === "bad_commit" ? t("verify.badCommit")
        : t("verify.mismatch", { what: v.differs.map((k) => t(`verify.what.${k === "soc_draw" ? "soc" : k}`)).join(", ") });
    $("#verify-computed").textContent = v.computed ? t("verify.computed", { numbers: v.computed.numbers.join(" ") }) : "";
  } catch (err) {
    explain(err);
  }
}

async function rotateAndVerify() {
  try {
    await state.client.rotateSeed();
    detail = (await state.client.game(detail.game)).detail;
    openVerify();
  } catch (e) {
    explain(e);
  }
}

// ---------- limits ----------

let limits = null;
let pending = [];

export async function openLimits() {
  if (!state.client) return;
  try {
    limits = (await state.client.balance()).limits;
    renderLimits();
    $("#lim-cap").value = limits.deposit_cap / 100;
    $("#lim-loss").value = limits.loss_limit < 0 ? "" : limits.loss_limit / 100;
    // A running self-exclusion can be neither shortened nor extended.
    $("#lim-excl").value = 0;
    $("#lim-excl").disabled = limits.excluded_until > Date.now();
    $("#lim-reality").value = String(realityMinutes());
    open($("#limits-dialog"));
  } catch (e) {
    explain(e);
  }
}

function renderLimits() {
  const l = limits;
  if (!l) return;
  let text = t("limits.state", { cap: euros(l.deposit_cap), used: euros(l.deposited_week) });
  if (l.deposit_cap_pending) text += t("limits.pendingCap", { value: euros(l.deposit_cap_pending), when: i18n.when(l.deposit_cap_pending_at) });
  text += " " + (l.loss_limit < 0 ? t("limits.noLoss") : t("limits.loss", { loss: euros(l.loss_limit), lost: euros(Math.max(0, l.lost_today)) }));
  if (l.loss_limit_pending) text += t("limits.pendingLoss", { value: euros(l.loss_limit_pending), when: i18n.when(l.loss_limit_pending_at) });
  if (l.excluded_until > Date.now()) text += " " + t("limits.excluded", { when: i18n.when(l.excluded_until) });
  $("#limits-text").textContent = text;
  $("#limits-rule").textContent = t("limits.rule", { days: Math.round((state.config.limit_raise_ms || 7 * 864e5) / 864e5) });
  $("#lim-reality").replaceChildren(...[0, 15, 30, 60].map((m) => el("option", { value: m, textContent: m ? t("limits.minutes", { n: m }) : t("limits.realityOff") })));
  $("#lim-reality").value = String(realityMinutes());
}

// The form states what each change means before anything is sent.
function reviewLimits(ev) {
  ev.preventDefault();
  const l = limits;
  pending = [];
  const lines = [];
  const raiseAt = i18n.when(Date.now() + (state.config.limit_raise_ms || 0));
  const money = (kind, name, input, old) => {
    if (input.value === "") return;
    const v = Math.round(+input.value * 100);
    if (!(v >= 0) || v === old) return;
    pending.push([kind, v]);
    const raise = old >= 0 && v > old; // a loss limit set where there was none is a lowering
    lines.push(t(raise ? "limits.raiseLater" : "limits.lowerNow", { what: t(name), value: euros(v), when: raiseAt }));
  };
  money("deposit_cap", "limits.capName", $("#lim-cap"), l.deposit_cap);
  money("loss_limit", "limits.lossName", $("#lim-loss"), l.loss_limit);
  const days = Math.floor(+$("#lim-excl").value);
  if (days > 0 && !$("#lim-excl").disabled) {
    const until = Date.now() + days * 864e5;
    pending.push(["excluded_until", until]);
    lines.push(t("limits.excludeConfirm", { when: i18n.when(until) }));
  }
  localStorage.setItem("keno-reality-min", $("#lim-reality").value);
  startReality();
  if (!pending.length) {
    $("#limits-dialog").close();
    return say("limits.nothing");
  }
  $("#confirm-list").replaceChildren(...lines.map((s) => el("li", { textContent: s })));
  open($("#confirm-dialog"));
  $("#confirm-title").focus();
}

async function applyLimits() {
  $("#confirm-dialog").close();
  try {
    for (const [kind, v] of pending) await state.client.setLimit(kind, v);
    pending = [];
    await openLimits();
    say("msg.limitsSaved");
  } catch (e) {
    explain(e);
  }
}

// ---------- deposit (dev mode) ----------

export function openDeposit() { open($("#deposit-dialog")); }

async function deposit(ev) {
  ev.preventDefault();
  try {
    const b = await state.client.deposit(Math.round(+$("#dep-amount").value * 100), crypto.randomUUID());
    setBalance(b.balance);
    $("#deposit-dialog").close();
    say("msg.deposited", { balance: euros(b.balance) });
  } catch (e) {
    explain(e);
  }
}

// ---------- reality check ----------

let realityTimer = null;
let realityDue = false;

function realityMinutes() {
  const v = localStorage.getItem("keno-reality-min");
  return v === null ? 30 : +v;
}

/** Every N minutes of play: time played and net result, between games. */
export function startReality() {
  clearInterval(realityTimer);
  // keno-reality-ms: the interval in ms, for tests; the player picks minutes.
  const ms = +localStorage.getItem("keno-reality-ms") || realityMinutes() * 60_000;
  if (!ms) return;
  realityTimer = setInterval(() => {
    realityDue = true;
    if (!state.playing) showReality();
  }, ms);
}

export function realityAfterTicket() {
  if (realityDue) showReality();
}

function showReality() {
  realityDue = false;
  if ($("#reality-dialog").open) return renderReality();
  renderReality();
  open($("#reality-dialog"));
  $("#reality-title").focus();
}

function renderReality() {
  const s = state.session;
  $("#reality-text").textContent = t("reality.text", { minutes: Math.max(1, Math.round((Date.now() - s.start) / 60_000)),
    net: euros(s.won - s.staked), staked: euros(s.staked), won: euros(s.won) });
}

// ---------- wiring ----------

export function rerender() {
  renderRules();
  if ($("#detail-dialog").open) renderDetail();
  renderLimits();
  if ($("#reality-dialog").open) renderReality();
}

export function wire() {
  $("#btn-rules").onclick = openRules;
  $("#rules-close").onclick = () => $("#rules-dialog").close();
  $("#btn-history").onclick = () => openHistory(false);
  $("#history-more").onclick = () => openHistory(true);
  $("#history-close").onclick = () => $("#history-dialog").close();
  $("#detail-back").onclick = () => $("#detail-dialog").close();
  $("#detail-replay").onclick = () => replayBet(detail.game);
  $("#detail-animate").onclick = () => {
    for (const d of document.querySelectorAll("dialog[open]")) d.close();
    animate(detail);
    $("#play").scrollIntoView({ block: "start", behavior: "instant" });
  };
  $("#detail-verify").onclick = openVerify;
  $("#verify-form").onsubmit = runVerify;
  $("#verify-rotate").onclick = rotateAndVerify;
  $("#verify-close").onclick = () => $("#verify-dialog").close();
  $("#btn-limits").onclick = openLimits;
  $("#limits-form").onsubmit = reviewLimits;
  $("#limits-close").onclick = () => $("#limits-dialog").close();
  $("#confirm-yes").onclick = applyLimits;
  $("#confirm-no").onclick = () => $("#confirm-dialog").close();
  $("#btn-deposit").onclick = openDeposit;
  $("#deposit-form").onsubmit = deposit;
  $("#deposit-close").onclick = () => $("#deposit-dialog").close();
  $("#reality-go").onclick = () => $("#reality-dialog").close();
  $("#reality-history").onclick = () => { $("#reality-dialog").close(); openHistory(false); };
  $("#reality-quit").onclick = () => {
    $("#reality-dialog").close();
    clearInterval(realityTimer);
    sessionStorage.removeItem("keno-token");
    state.client?.close();
    $("#game").hidden = true;
    say("reality.bye");
  };
}
