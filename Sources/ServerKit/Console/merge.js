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
