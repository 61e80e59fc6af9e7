// Runs Protocol/merge-cases.json against the console's merge module (Sources/ServerHTTP/Console/
// merge.js) in node: the same table MergeTableTests runs against the agent's decisions.
// Prints a line per failing case and "N passed, N failed"; exits 1 on any failure.
//
//   node Tests/Console/merge-table.mjs
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseTyped, member, plain, encodeTyped } from '../../Sources/ServerHTTP/Console/values.js';
import { mergeRecord, sameFields, orderMoves, applyMoves } from '../../Sources/ServerHTTP/Console/merge.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const table = parseTyped(readFileSync(root + 'Protocol/merge-cases.json', 'utf8'));

// A case's record state: its fields (a Map), null for deleted, undefined for none (`"none"`).
function state(v) {
  if (!v || v.type !== 'dict') return undefined;
  const fields = member(v, 'fields');
  return fields ? fields.entries : null;
}

const show = (fields) => (fields === null ? 'deleted' : fields === undefined ? 'none' : encodeTyped({ type: 'dict', entries: fields }));
let passed = 0;
let failed = 0;
for (const item of table.items) {
  const name = plain(member(item, 'name'));
  const order = member(item, 'order');
  if (order) {
    const ids = (key) => plain(member(order, key));
    const got = applyMoves(ids('theirs'), orderMoves(ids('base'), ids('mine'), ids('theirs')));
    if (got.join() === ids('expect').join()) passed++;
    else { failed++; console.log(`FAIL ${name}: got ${got.join()}; the table says ${ids('expect').join()}`); }
    continue;
  }
  const expect = member(item, 'expect');
  const wanted = { result: state(member(expect, 'result')), conflictCopy: member(expect, 'conflict_copy')?.entries ?? null, push: plain(member(expect, 'push')) };
  const got = mergeRecord(state(member(item, 'base')), state(member(item, 'mine')), state(member(item, 'theirs')));
  if (sameFields(got.result, wanted.result) && sameFields(got.conflictCopy, wanted.conflictCopy) && got.push === wanted.push) {
    passed++;
  } else {
    failed++;
    console.log(`FAIL ${name}: got result ${show(got.result)}, copy ${show(got.conflictCopy)}, push ${got.push}; `
      + `the table says ${show(wanted.result)}, ${show(wanted.conflictCopy)}, ${wanted.push}`);
  }
}
console.log(`merge table: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
