// Which fields the records table shows, in which order, and how the rows are filtered and
// sorted. The collection's own order of fields comes first (each field where it first appears,
// records in list order: a new field lands at the end, not in the middle); a person may move
// and hide columns, remembered per collection in this browser. Filtering and sorting change the
// view only, never the list's order.
import { display } from './values.js';

const key = (collection) => `columns:${collection}`;

export class ColumnView {
  constructor(collection) {
    let saved = { order: [], hidden: [] };
    try { saved = { ...saved, ...JSON.parse(localStorage.getItem(key(collection)) || '{}') }; } catch { /* a damaged entry: start over */ }
    this.collection = collection;
    this.order = saved.order;
    this.hidden = new Set(saved.hidden);
    this.filter = '';
    this.sort = null; // {field, descending}
  }

  // Every field, in the order the table uses: the person's, then the collection's for the rest.
  all(natural) {
    const placed = this.order.filter((name) => natural.includes(name));
    return [...placed, ...natural.filter((name) => !placed.includes(name))];
  }

  shown(natural) {
    return this.all(natural).filter((name) => !this.hidden.has(name));
  }

  move(name, step, natural) {
    const all = this.all(natural);
    const at = all.indexOf(name);
    const to = at + step;
    if (at < 0 || to < 0 || to >= all.length) return;
    [all[at], all[to]] = [all[to], all[at]];
    this.order = all;
    this.save();
  }

  toggle(name) {
    if (this.hidden.has(name)) this.hidden.delete(name); else this.hidden.add(name);
    this.save();
  }

  save() {
    localStorage.setItem(key(this.collection), JSON.stringify({ order: this.order, hidden: [...this.hidden] }));
  }

  // Whether the view is the list's own order (dragging and ↑ ↓ make sense only then).
  get isListOrder() { return !this.sort && !this.filter; }

  matches(record) {
    if (!this.filter) return true;
    const wanted = this.filter.toLowerCase();
    if (record.id.toLowerCase().includes(wanted)) return true;
    for (const value of record.fields.values()) if (display(value).toLowerCase().includes(wanted)) return true;
    return false;
  }

  // The next sort when a column's header is clicked: up, down, then the list's order.
  cycleSort(field) {
    if (!this.sort || this.sort.field !== field) this.sort = { field, descending: false };
    else if (!this.sort.descending) this.sort = { field, descending: true };
    else this.sort = null;
  }

  compare(a, b) {
    const { field, descending } = this.sort;
    const value = (record) => (field === 'id' ? { type: 'string', value: record.id } : record.fields.get(field));
    const order = compareValues(value(a), value(b));
    return descending ? -order : order;
  }
}

// Numbers by number, everything else by its text; a missing value last.
function compareValues(a, b) {
  if (!a || !b) return !a && !b ? 0 : !a ? 1 : -1;
  if ((a.type === 'integer' || a.type === 'real') && (b.type === 'integer' || b.type === 'real')) return Number(a.text) - Number(b.text);
  return display(a).localeCompare(display(b), undefined, { numeric: true });
}
