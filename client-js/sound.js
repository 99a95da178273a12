// sound.js — short synthesised sounds (Web Audio: nothing to download).
// The audio context starts on the first gesture, as browsers require; the
// mute choice is kept across visits.

let ctx = null;
let muted = (() => { try { return localStorage.getItem("keno-muted") === "1"; } catch { return false; } })();

export const isMuted = () => muted;

export function setMuted(m) {
  muted = m;
  try { localStorage.setItem("keno-muted", m ? "1" : "0"); } catch { /* not kept */ }
}

/** Call from a user gesture: browsers only let audio start from one. */
export function unlock() {
  if (!ctx && window.AudioContext) ctx = new AudioContext();
  if (ctx?.state === "suspended") ctx.resume();
}

function tone(freq, start, dur, type = "sine", gain = 0.08) {
  const o = ctx.createOscillator(), g = ctx.createGain();
  o.type = type;
  o.frequency.setValueAtTime(freq, ctx.currentTime + start);
  g.gain.setValueAtTime(0.0001, ctx.currentTime + start);
  g.gain.exponentialRampToValueAtTime(gain, ctx.currentTime + start + 0.01);
  g.gain.exponentialRampToValueAtTime(0.0001, ctx.currentTime + start + dur);
  o.connect(g).connect(ctx.destination);
  o.start(ctx.currentTime + start);
  o.stop(ctx.currentTime + start + dur + 0.02);
}

const sounds = {
  color: () => tone(660, 0, 0.06, "triangle", 0.03),
  ball: () => tone(440, 0, 0.12, "sine", 0.06),
  hit: () => { tone(880, 0, 0.12, "triangle"); tone(1320, 0.06, 0.14, "triangle", 0.05); },
  suspense: () => { for (let i = 0; i < 4; i++) tone(220 + i * 40, i * 0.08, 0.1, "square", 0.02); },
  gold: () => [784, 988, 1175].forEach((f, i) => tone(f, i * 0.07, 0.2, "triangle")),
  red: () => { tone(196, 0, 0.35, "sawtooth", 0.05); tone(147, 0.15, 0.4, "sawtooth", 0.05); },
  offer: () => { tone(523, 0, 0.15); tone(659, 0.12, 0.2); },
  lose: () => tone(262, 0, 0.3, "sine", 0.04),
};

/** A win: the fanfare grows with the win over the stake. */
function win(ratio) {
  const notes = ratio >= 50 ? [523, 659, 784, 1047, 1319, 1568] : ratio >= 5 ? [523, 659, 784, 1047] : [659, 784];
  notes.forEach((f, i) => tone(f, i * 0.11, 0.3, "triangle", 0.07));
}

export function play(name, arg) {
  if (muted || !ctx || ctx.state !== "running") return;
  if (name === "win") win(arg);
  else sounds[name]?.();
}
