// i18n.js — the page's words and formats. French first; the choice is kept
// across visits. Strings live in lang/<code>.js, one table per language;
// elements name theirs with data-t (text), data-t-label (aria-label) and
// data-t-title (title).

export const LANGS = ["fr", "en"];
let table = {};
let money = null;
let dates = null;
let percent = null;
let plain = null;

/** The string for key, with {name} replaced from vars. */
export function t(key, vars = {}) {
  const s = table[key] ?? key;
  return s.replace(/\{(\w+)\}/g, (_, k) => (vars[k] ?? ""));
}

export const has = (key) => key in table;

/** Cents in the locale's euro format: "1,50 €" in French, "€1.50" in English. */
export const euros = (cents) => money.format((cents ?? 0) / 100);

/** A date and time in the locale's format. */
export const when = (ms) => dates.format(new Date(ms));

/** A fraction as a percentage: 0.6812 → "68,12 %". */
export const pct = (x) => percent.format(x);

/** A number in the locale's format, four significant digits. */
export const num = (x) => plain.format(x);

export const current = () => document.documentElement.lang;

/** Loads a language and translates the static page. */
export async function use(lang) {
  if (!LANGS.includes(lang)) lang = "fr";
  table = (await import(`./lang/${lang}.js`)).default;
  money = new Intl.NumberFormat(table.locale, { style: "currency", currency: "EUR" });
  dates = new Intl.DateTimeFormat(table.locale, { dateStyle: "short", timeStyle: "short" });
  percent = new Intl.NumberFormat(table.locale, { style: "percent", minimumFractionDigits: 2, maximumFractionDigits: 2 });
  plain = new Intl.NumberFormat(table.locale, { maximumSignificantDigits: 4 });
  document.documentElement.lang = lang;
  try { localStorage.setItem("keno-lang", lang); } catch { /* private mode: not kept */ }
  for (const e of document.querySelectorAll("[data-t]")) e.textContent = t(e.dataset.t);
  for (const e of document.querySelectorAll("[data-t-label]")) e.setAttribute("aria-label", t(e.dataset.tLabel));
  for (const e of document.querySelectorAll("[data-t-title]")) e.title = t(e.dataset.tTitle);
  document.title = t("title");
  return lang;
}

/** The language kept from the last visit, French otherwise. */
export function preferred() {
  try { return localStorage.getItem("keno-lang") || "fr"; } catch { return "fr"; }
}
