// Record values as the wire carries them (Protocol/PROTOCOL.md §3), kept typed in the browser:
// JSON.parse would turn the real 1.0 into the integer 1, so records are read with this parser.
// A value is {type, ...}: string/bool/date/data {value}, integer/real {text},
// array {items}, dict {entries: Map}.

export function parseTyped(text) {
  let at = 0;
  const fail = (why) => { throw new SyntaxError(`${why} at ${at}`); };
  const space = () => { while (at < text.length && ' \t\r\n'.includes(text[at])) at++; };
  function string() {
    let out = '';
    at++;
    for (;;) {
      const c = text[at++];
      if (c === undefined) fail('unterminated string');
      if (c === '"') return out;
      if (c !== '\\') { out += c; continue; }
      const e = text[at++];
      if (e === 'u') { out += String.fromCharCode(parseInt(text.slice(at, at + 4), 16)); at += 4; }
      else out += { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' }[e] ?? fail('bad escape');
    }
  }
  function value() {
    space();
    const c = text[at];
    if (c === '{') {
      at++;
      const entries = new Map();
      space();
      if (text[at] === '}') { at++; return wrapObject(entries); }
      for (;;) {
        space();
        const key = string();
        space();
        if (text[at++] !== ':') fail('expected :');
        entries.set(key, value());
        space();
        const next = text[at++];
        if (next === '}') return wrapObject(entries);
        if (next !== ',') fail('expected , or }');
      }
    }
    if (c === '[') {
      at++;
      const items = [];
      space();
      if (text[at] === ']') { at++; return { type: 'array', items }; }
      for (;;) {
        items.push(value());
        space();
        const next = text[at++];
        if (next === ']') return { type: 'array', items };
        if (next !== ',') fail('expected , or ]');
      }
    }
    if (c === '"') return { type: 'string', value: string() };
    if (text.startsWith('true', at)) { at += 4; return { type: 'bool', value: true }; }
    if (text.startsWith('false', at)) { at += 5; return { type: 'bool', value: false }; }
    if (text.startsWith('null', at)) { at += 4; return { type: 'null' }; }
    const number = /^-?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(at, at + 400));
    if (!number) fail('unexpected character');
    at += number[0].length;
    return number[1] || number[2] ? { type: 'real', text: number[0] } : { type: 'integer', text: number[0] };
  }
  const result = value();
  space();
  if (at !== text.length) fail('trailing characters');
  return result;
}

// {"$date": …} and {"$data": …} are dates and data; "$$key" is the key "$key".
function wrapObject(entries) {
  if (entries.size === 1) {
    const [[key, inner]] = entries;
    if (key === '$date' && inner.type === 'string') return { type: 'date', value: inner.value };
    if (key === '$data' && inner.type === 'string') return { type: 'data', value: inner.value };
  }
  const unescaped = new Map();
  for (const [key, inner] of entries) unescaped.set(key.startsWith('$$') ? key.slice(1) : key, inner);
  return { type: 'dict', entries: unescaped };
}

export function encodeTyped(v) {
  switch (v.type) {
    case 'string': return JSON.stringify(v.value);
    case 'bool': return v.value ? 'true' : 'false';
    case 'integer': case 'real': return v.text;
    case 'date': return `{"$date":${JSON.stringify(v.value)}}`;
    case 'data': return `{"$data":${JSON.stringify(v.value)}}`;
    case 'array': return `[${v.items.map(encodeTyped).join(',')}]`;
    case 'dict': return `{${[...v.entries].map(([k, x]) => `${JSON.stringify(k.startsWith('$') ? '$' + k : k)}:${encodeTyped(x)}`).join(',')}}`;
    default: return 'null';
  }
}

// A plain JS value out of a typed one (ids, revs, envelope members).
export function plain(v) {
  if (!v) return undefined;
  switch (v.type) {
    case 'integer': case 'real': return Number(v.text);
    case 'array': return v.items.map(plain);
    case 'dict': return Object.fromEntries([...v.entries].map(([k, x]) => [k, plain(x)]));
    default: return v.value;
  }
}

export function member(v, key) {
  return v && v.type === 'dict' ? v.entries.get(key) : undefined;
}

// How a value shows in a cell.
export function display(v) {
  if (!v) return '—';
  switch (v.type) {
    case 'string': return v.value;
    case 'integer': case 'real': return v.text;
    case 'bool': return v.value ? 'yes' : 'no';
    case 'date': return v.value.replace('T', ' ').replace('Z', ' UTC');
    case 'data': return `data (${Math.floor(v.value.length * 3 / 4)} bytes)`;
    default: return encodeTyped(v);
  }
}

// Kinds edited as the wire's typed JSON in a text box (a list, a dictionary, data).
export const structured = new Set(['array', 'dict', 'data']);

// The input for editing a value of `type`, filled with `v`.
export function editor(type, v) {
  if (structured.has(type)) {
    const area = document.createElement('textarea');
    area.rows = 4;
    area.value = v ? encodeTyped(v) : (type === 'array' ? '[]' : type === 'dict' ? '{}' : '{"$data":""}');
    area.spellcheck = false;
    return area;
  }
  if (type === 'bool') {
    const select = document.createElement('select');
    for (const option of ['yes', 'no']) select.append(new Option(option, option));
    select.value = v && v.value === false ? 'no' : 'yes';
    return select;
  }
  const input = document.createElement('input');
  if (type === 'integer') { input.type = 'number'; input.step = '1'; input.value = v ? v.text : ''; }
  else if (type === 'real') { input.type = 'number'; input.step = 'any'; input.value = v ? v.text : ''; }
  else if (type === 'date') { input.type = 'datetime-local'; input.step = '1'; input.value = v ? v.value.replace(/(\.\d+)?Z$/, '').slice(0, 19) : ''; }
  else input.value = v ? v.value : '';
  return input;
}

// The typed value an editor holds, or throws with a reason a person can act on.
export function readEditor(type, input) {
  const raw = input.value;
  switch (type) {
    case 'bool': return { type: 'bool', value: raw === 'yes' };
    case 'integer':
    {
      if (!/^-?\d+$/.test(raw.trim())) throw new Error('a whole number is needed');
      const integer = BigInt(raw.trim());
      // The plist integer range (PROTOCOL.md §3): Int64's, and up to 2^64-1 above it.
      if (integer < -(2n ** 63n) || integer >= 2n ** 64n) throw new Error('a whole number from -9223372036854775808 to 18446744073709551615 is needed');
      return { type: 'integer', text: String(integer) };
    }
    case 'real': {
      const n = Number(raw);
      if (raw.trim() === '' || !Number.isFinite(n)) throw new Error('a number is needed');
      const text = String(n);
      return { type: 'real', text: /[.eE]/.test(text) ? text : text + '.0' };
    }
    case 'date':
      if (!raw) throw new Error('a date is needed');
      return { type: 'date', value: (raw.length === 16 ? raw + ':00' : raw) + 'Z' };
    case 'array': case 'dict': case 'data': {
      let value;
      try { value = parseTyped(raw); } catch (error) { throw new Error(`not JSON: ${error.message}`); }
      if (containsNull(value)) throw new Error('null is not a plist value');
      return value;
    }
    default: return { type: 'string', value: raw };
  }
}

export function sameValue(a, b) {
  return (a ? encodeTyped(a) : '') === (b ? encodeTyped(b) : '');
}

function containsNull(v) {
  if (v.type === 'null') return true;
  if (v.type === 'array') return v.items.some(containsNull);
  if (v.type === 'dict') return [...v.entries.values()].some(containsNull);
  return false;
}

// The fields whose values differ between two field maps (added, removed or changed).
export function changedFields(before, after) {
  const names = new Set([...before.keys(), ...after.keys()]);
  return [...names].filter((name) => !sameValue(before.get(name), after.get(name)));
}
