// The two language tables name the same strings, with the same {values}.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import fr from "../lang/fr.js";
import en from "../lang/en.js";

const vars = (s) => [...s.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort().join(",");

test("French and English tables have the same keys and placeholders", () => {
  assert.deepEqual(Object.keys(en).sort(), Object.keys(fr).sort());
  for (const k of Object.keys(fr)) assert.equal(vars(en[k]), vars(fr[k]), `placeholders of ${k}`);
});

// Every error a player can meet is explained in their words (not by the
// generic "unknown"): the codes of protocol/protocol.go, less those only a
// broken client earns and limit_reached (explained by its reason).
test("every error code a player can meet has its sentence", () => {
  const src = readFileSync(new URL("../../protocol/protocol.go", import.meta.url), "utf8");
  const codes = [...src.matchAll(/\bCode\w+\s*=\s*"(\w+)"/g)].map((m) => m[1]);
  assert.ok(codes.length > 20, "protocol codes found");
  const clientBugs = new Set(["too_large", "unknown_type", "unsupported_version", "limit_reached"]);
  for (const c of codes.filter((c) => !clientBugs.has(c))) assert.ok(fr[`error.${c}`], `error.${c}`);
});
