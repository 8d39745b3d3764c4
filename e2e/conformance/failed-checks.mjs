// Prints, check by check, what failed in a conformance run whose results
// were saved with --output-dir DIR: the suite's own summary names the
// scenarios that failed, not why. Scenarios an expected-failures file
// lists (under any key) are left out.
//
// Usage: node failed-checks.mjs DIR EXPECTED_FAILURES_YML
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const [dir, expectedFile] = process.argv.slice(2);
const expected = new Set(
  readFileSync(expectedFile, "utf8")
    .split("\n")
    .map((line) => line.match(/^\s*-\s*([^\s#]+)/)?.[1])
    .filter(Boolean),
);
let entries = [];
try {
  entries = readdirSync(dir).sort();
} catch (err) {
  console.log(`conformance: no results in ${dir}: ${err.message}`);
}
for (const entry of entries) {
  // server-<scenario>-<ISO time with : and . as ->
  const scenario = entry.match(/^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$/)?.[1];
  if (!scenario || expected.has(scenario)) continue;
  let checks;
  try {
    checks = JSON.parse(readFileSync(join(dir, entry, "checks.json"), "utf8"));
  } catch (err) {
    console.log(`conformance: ${scenario}: no checks saved: ${err.message}`);
    continue;
  }
  for (const c of checks.filter((c) => c.status === "FAILURE")) {
    console.log(`conformance: ${scenario}: ${c.name} failed: ${c.errorMessage ?? c.description}`);
    if (c.details !== undefined) {
      console.log(`  details: ${JSON.stringify(c.details).slice(0, 2000)}`);
    }
  }
}
