// The two language tables name the same strings, with the same {values}.
import { test } from "node:test";
import assert from "node:assert/strict";
import fr from "../lang/fr.js";
import en from "../lang/en.js";

const vars = (s) => [...s.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort().join(",");

test("French and English tables have the same keys and placeholders", () => {
  assert.deepEqual(Object.keys(en).sort(), Object.keys(fr).sort());
  for (const k of Object.keys(fr)) assert.equal(vars(en[k]), vars(fr[k]), `placeholders of ${k}`);
});
