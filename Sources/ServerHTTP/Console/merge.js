// The agent's merge rules (DESIGN.md §5; AgentDecisions' RemoteChange and SyncCore's
// ThreeWayMerge) for a device whose write met a newer state on the server: the browser merges
// exactly as the agent does. Protocol/merge-cases.json is run against both (MergeTableTests in
// Swift, Tests/Console/merge-table.mjs here), so the two cannot drift.
//
// Fields are Maps of typed values (values.js); a record state is its fields, or null when
// deleted. `base` is what the device last had from the server (undefined: the two sides share
// no version, as when both made the same id).
import { sameValue } from './values.js';

// Field by field: a field changed on one side only takes that side's value; changed on both to
// different values, the server's value stays and the field is named in `conflicts`. A missing
// field is a value too ("absent"), so additions and removals merge like edits.
export function mergeFields(base, mine, theirs) {
  const merged = new Map();
  const conflicts = [];
  const names = [...new Set([...mine.keys(), ...theirs.keys()])].sort();
  for (const name of names) {
    const original = base?.get(name);
    const ours = mine.get(name);
    const other = theirs.get(name);
    let chosen;
    if (sameValue(ours, other) || sameValue(ours, original)) chosen = other;
    else if (sameValue(other, original)) chosen = ours;
    else { chosen = other; conflicts.push(name); }
    if (chosen !== undefined) merged.set(name, chosen);
  }
  return { merged, conflicts };
}

export function sameFields(a, b) {
  if (a === null || b === null) return a === b;
  if (a.size !== b.size) return false;
  for (const [name, value] of a) if (!sameValue(value, b.get(name))) return false;
  return true;
}

// A device's state `mine` meeting the server's newer `theirs`, against `base`: the record's
// state afterwards (`result`, null when deleted), the device's version to file as a conflict
// copy in `<c>~conflicts` (or null), and whether `result` must go up to the server (`push`).
// An edit beats a delete, on either side; a delete stands against a record only moved.
export function mergeRecord(base, mine, theirs) {
  const untouched = base !== undefined && sameFields(mine, base);
  if (untouched) return { result: theirs, conflictCopy: null, push: false };
  if (mine === null) {
    if (theirs === null) return { result: null, conflictCopy: null, push: false };
    if (base !== undefined && base !== null && sameFields(theirs, base)) return { result: null, conflictCopy: null, push: true };
    return { result: theirs, conflictCopy: null, push: false };
  }
  if (theirs === null) return { result: mine, conflictCopy: null, push: true };
  const { merged, conflicts } = mergeFields(base ?? null, mine, theirs);
  return { result: merged, conflictCopy: conflicts.length ? mine : null, push: !sameFields(merged, theirs) };
}

// The moves that carry a device's reordering from `base` (the order it saw) to `desired` (the
// order it wants) over to `current` (the server's order now, with other people's moves): the
// agent's OrderPlanner, rule for rule. The rows off a longest run that kept their relative
// order are the ones moved here; a row moved to the top or the bottom goes first or last, any
// other next to its nearest neighbour in `desired` that nobody else moved (after the one before
// it, else before the one after it). A row someone else moved meanwhile stays where they put it.
// Returns [{id, to: 'first'|'last'|'after'|'before', anchor?}].
export function orderMoves(base, desired, current) {
  const baseIndex = new Map();
  base.forEach((id, index) => { if (!baseIndex.has(id)) baseIndex.set(id, index); });
  const present = new Set(current);
  const seen = new Set();
  const wanted = desired.filter((id) => present.has(id) && !seen.has(id) && seen.add(id));
  const based = wanted.filter((id) => baseIndex.has(id));
  const kept = new Set(longestIncreasingRun(based.map((id) => baseIndex.get(id))).map((index) => based[index]));
  const known = current.filter((id) => baseIndex.has(id));
  const steady = new Set(longestIncreasingRun(known.map((id) => baseIndex.get(id))).map((index) => known[index]));
  const anchors = new Set(wanted.filter((id) => kept.has(id) && steady.has(id)));
  const moves = [];
  wanted.forEach((id, offset) => {
    if (kept.has(id)) return;
    if (baseIndex.has(id) && !steady.has(id)) return;
    let previous;
    for (let at = offset - 1; at >= 0 && previous === undefined; at--) if (anchors.has(wanted[at])) previous = wanted[at];
    let next;
    for (let at = offset + 1; at < wanted.length && next === undefined; at++) if (anchors.has(wanted[at])) next = wanted[at];
    if (offset === 0) moves.push({ id, to: 'first' });
    else if (offset === wanted.length - 1) moves.push({ id, to: 'last' });
    else if (previous !== undefined) moves.push({ id, to: 'after', anchor: previous });
    else if (next !== undefined) moves.push({ id, to: 'before', anchor: next });
    else moves.push({ id, to: 'last' });
    anchors.add(id);
  });
  return moves;
}

// Indices (into `values`) of one longest strictly increasing run, found as OrderPlanner finds it.
export function longestIncreasingRun(values) {
  const tails = [];
  const previous = new Array(values.length).fill(-1);
  values.forEach((value, index) => {
    let low = 0;
    let high = tails.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (values[tails[middle]] < value) low = middle + 1; else high = middle;
    }
    if (low > 0) previous[index] = tails[low - 1];
    if (low === tails.length) tails.push(index); else tails[low] = index;
  });
  const run = [];
  for (let cursor = tails.length ? tails[tails.length - 1] : -1; cursor >= 0; cursor = previous[cursor]) run.push(cursor);
  return run.reverse();
}

// `order` with `moves` applied (what the server does with them), for the table and for showing
// a device's pending moves.
export function applyMoves(order, moves) {
  const result = [...order];
  for (const { id, to, anchor } of moves) {
    const from = result.indexOf(id);
    if (from < 0) continue;
    result.splice(from, 1);
    if (to === 'first') result.unshift(id);
    else if (to === 'last') result.push(id);
    else {
      const at = result.indexOf(anchor);
      if (at < 0) result.push(id); else result.splice(to === 'after' ? at + 1 : at, 0, id);
    }
  }
  return result;
}
