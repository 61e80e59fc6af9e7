// QR codes (ISO/IEC 18004) for invitation links: byte mode, error correction level M,
// versions 1-13 (up to 334 bytes), the mask with the lowest penalty. Written here from the
// standard's rules: `qrModules(text)` gives the square of dark (true) and light modules,
// `qrSVG(text)` an <svg> of it with a four-module quiet zone.

// Level M, per version (index 1-13): error-correction codewords per block, and blocks.
const ECC_PER_BLOCK = [0, 10, 16, 26, 18, 24, 16, 18, 22, 22, 26, 30, 22, 22];
const BLOCKS = [0, 1, 1, 1, 2, 2, 4, 4, 4, 5, 5, 5, 8, 9];
const MAX_VERSION = 13;
const FORMAT_LEVEL_M = 0b00;

// Modules that carry data (and remainder bits) in a symbol of `version`.
function rawDataModules(version) {
  let modules = (16 * version + 128) * version + 64;
  if (version >= 2) {
    const alignments = Math.floor(version / 7) + 2;
    modules -= (25 * alignments - 10) * alignments - 55;
    if (version >= 7) modules -= 36;
  }
  return modules;
}

const dataCodewords = (version) => Math.floor(rawDataModules(version) / 8) - ECC_PER_BLOCK[version] * BLOCKS[version];

// GF(256) with the polynomial x^8 + x^4 + x^3 + x^2 + 1.
function multiply(x, y) {
  let product = 0;
  for (let bit = 7; bit >= 0; bit--) {
    product = (product << 1) ^ ((product >>> 7) * 0x11d);
    product ^= ((y >>> bit) & 1) * x;
  }
  return product;
}

// The generator polynomial of degree `degree` (its leading 1 left out), roots 2^0 … 2^(degree-1).
function generator(degree) {
  const coefficients = new Array(degree).fill(0);
  coefficients[degree - 1] = 1;
  let root = 1;
  for (let i = 0; i < degree; i++) {
    for (let j = 0; j < degree; j++) {
      coefficients[j] = multiply(coefficients[j], root);
      if (j + 1 < degree) coefficients[j] ^= coefficients[j + 1];
    }
    root = multiply(root, 0x02);
  }
  return coefficients;
}

function remainder(data, divisor) {
  const result = new Array(divisor.length).fill(0);
  for (const byte of data) {
    const factor = byte ^ result.shift();
    result.push(0);
    divisor.forEach((coefficient, i) => { result[i] ^= multiply(coefficient, factor); });
  }
  return result;
}

// The data codewords: mode 0100, the length, the bytes, a terminator, then 0xEC 0x11 padding.
function encodeData(bytes, version) {
  const bits = [];
  const put = (value, length) => { for (let i = length - 1; i >= 0; i--) bits.push((value >>> i) & 1); };
  put(0b0100, 4);
  put(bytes.length, version <= 9 ? 8 : 16);
  for (const byte of bytes) put(byte, 8);
  const capacity = dataCodewords(version) * 8;
  put(0, Math.min(4, capacity - bits.length));
  put(0, (8 - (bits.length % 8)) % 8);
  const codewords = [];
  for (let i = 0; i < bits.length; i += 8) codewords.push(bits.slice(i, i + 8).reduce((a, b) => (a << 1) | b, 0));
  for (let pad = 0xec; codewords.length < capacity / 8; pad ^= 0xec ^ 0x11) codewords.push(pad);
  return codewords;
}

// Splits the data into blocks, adds each block's error correction, and interleaves them.
function interleave(data, version) {
  const blocks = BLOCKS[version];
  const eccLength = ECC_PER_BLOCK[version];
  const total = Math.floor(rawDataModules(version) / 8);
  const shortBlocks = blocks - (total % blocks);
  const shortLength = Math.floor(total / blocks);
  const divisor = generator(eccLength);
  const pieces = [];
  for (let i = 0, at = 0; i < blocks; i++) {
    const length = shortLength - eccLength + (i < shortBlocks ? 0 : 1);
    const block = data.slice(at, at + length);
    at += length;
    pieces.push({ data: block, ecc: remainder(block, divisor) });
  }
  const out = [];
  for (let i = 0; i <= shortLength - eccLength; i++) {
    for (const piece of pieces) if (i < piece.data.length) out.push(piece.data[i]);
  }
  for (let i = 0; i < eccLength; i++) for (const piece of pieces) out.push(piece.ecc[i]);
  return out;
}

function alignmentPositions(version) {
  if (version === 1) return [];
  const count = Math.floor(version / 7) + 2;
  const step = Math.ceil((version * 4 + 4) / (count * 2 - 2)) * 2;
  const positions = [6];
  for (let p = version * 4 + 10; positions.length < count; p -= step) positions.splice(1, 0, p);
  return positions;
}

// BCH code of `data` (`dataBits` long) by `poly` (`polyBits` of check bits).
function bch(data, dataBits, poly, polyBits) {
  let rest = data << polyBits;
  for (let i = dataBits + polyBits - 1; i >= polyBits; i--) if ((rest >>> i) & 1) rest ^= poly << (i - polyBits);
  return (data << polyBits) | rest;
}

const MASKS = [
  (x, y) => (x + y) % 2 === 0, (x, y) => y % 2 === 0, (x) => x % 3 === 0, (x, y) => (x + y) % 3 === 0,
  (x, y) => (Math.floor(x / 3) + Math.floor(y / 2)) % 2 === 0, (x, y) => ((x * y) % 2) + ((x * y) % 3) === 0,
  (x, y) => (((x * y) % 2) + ((x * y) % 3)) % 2 === 0, (x, y) => (((x + y) % 2) + ((x * y) % 3)) % 2 === 0,
];

class Symbol {
  constructor(version) {
    this.version = version;
    this.size = version * 4 + 17;
    this.dark = Array.from({ length: this.size }, () => new Array(this.size).fill(false));
    this.reserved = Array.from({ length: this.size }, () => new Array(this.size).fill(false));
  }

  set(x, y, dark) {
    this.dark[y][x] = dark;
    this.reserved[y][x] = true;
  }

  drawFunctionPatterns() {
    const size = this.size;
    for (let i = 0; i < size; i++) {
      this.set(6, i, i % 2 === 0);
      this.set(i, 6, i % 2 === 0);
    }
    for (const [cx, cy] of [[3, 3], [size - 4, 3], [3, size - 4]]) {
      for (let dy = -4; dy <= 4; dy++) {
        for (let dx = -4; dx <= 4; dx++) {
          const x = cx + dx, y = cy + dy;
          if (x < 0 || y < 0 || x >= size || y >= size) continue;
          const ring = Math.max(Math.abs(dx), Math.abs(dy));
          this.set(x, y, ring !== 2 && ring !== 4);
        }
      }
    }
    const positions = alignmentPositions(this.version);
    for (const ay of positions) {
      for (const ax of positions) {
        if ((ax === 6 && ay === 6) || (ax === 6 && ay === size - 7) || (ax === size - 7 && ay === 6)) continue;
        for (let dy = -2; dy <= 2; dy++) for (let dx = -2; dx <= 2; dx++) this.set(ax + dx, ay + dy, Math.max(Math.abs(dx), Math.abs(dy)) !== 1);
      }
    }
    this.drawFormat(0);
    if (this.version >= 7) {
      const bits = bch(this.version, 6, 0x1f25, 12);
      for (let i = 0; i < 18; i++) {
        const dark = ((bits >>> i) & 1) === 1;
        const a = size - 11 + (i % 3), b = Math.floor(i / 3);
        this.set(a, b, dark);
        this.set(b, a, dark);
      }
    }
  }

  drawFormat(mask) {
    const bits = bch((FORMAT_LEVEL_M << 3) | mask, 5, 0x537, 10) ^ 0x5412;
    const bit = (i) => ((bits >>> i) & 1) === 1;
    const size = this.size;
    for (let i = 0; i <= 5; i++) this.set(8, i, bit(i));
    this.set(8, 7, bit(6));
    this.set(8, 8, bit(7));
    this.set(7, 8, bit(8));
    for (let i = 9; i < 15; i++) this.set(14 - i, 8, bit(i));
    for (let i = 0; i < 8; i++) this.set(size - 1 - i, 8, bit(i));
    for (let i = 8; i < 15; i++) this.set(8, size - 15 + i, bit(i));
    this.set(8, size - 8, true);
  }

  // Places the codewords in the zigzag of two-module columns, right to left, skipping column 6.
  drawCodewords(codewords) {
    const size = this.size;
    let index = 0;
    for (let right = size - 1; right >= 1; right -= 2) {
      if (right === 6) right = 5;
      for (let vertical = 0; vertical < size; vertical++) {
        for (let j = 0; j < 2; j++) {
          const x = right - j;
          const upward = ((right + 1) & 2) === 0;
          const y = upward ? size - 1 - vertical : vertical;
          if (this.reserved[y][x]) continue;
          if (index < codewords.length * 8) this.dark[y][x] = ((codewords[index >>> 3] >>> (7 - (index & 7))) & 1) === 1;
          index++;
        }
      }
    }
  }

  applyMask(mask) {
    for (let y = 0; y < this.size; y++) {
      for (let x = 0; x < this.size; x++) if (!this.reserved[y][x] && MASKS[mask](x, y)) this.dark[y][x] = !this.dark[y][x];
    }
  }

  // The standard's penalty: runs of five or more, 2×2 blocks, finder-like patterns, and
  // how far the dark share is from half.
  penalty() {
    const size = this.size;
    let score = 0;
    const lines = [];
    for (let i = 0; i < size; i++) {
      lines.push(this.dark[i]);
      lines.push(this.dark.map((row) => row[i]));
    }
    for (const line of lines) {
      let run = 1;
      for (let i = 1; i <= size; i++) {
        if (i < size && line[i] === line[i - 1]) { run++; continue; }
        if (run >= 5) score += run - 2;
        run = 1;
      }
      const text = line.map((d) => (d ? '1' : '0')).join('');
      for (const pattern of ['10111010000', '00001011101']) {
        for (let at = text.indexOf(pattern); at !== -1; at = text.indexOf(pattern, at + 1)) score += 40;
      }
    }
    for (let y = 0; y + 1 < size; y++) {
      for (let x = 0; x + 1 < size; x++) {
        const d = this.dark[y][x];
        if (d === this.dark[y][x + 1] && d === this.dark[y + 1][x] && d === this.dark[y + 1][x + 1]) score += 3;
      }
    }
    const darkCount = this.dark.reduce((sum, row) => sum + row.filter(Boolean).length, 0);
    score += Math.floor(Math.abs(darkCount * 20 - size * size * 10) / (size * size)) * 10;
    return score;
  }
}

// The modules of `text` (UTF-8) as rows of booleans, dark true.
export function qrModules(text) {
  const bytes = [...new TextEncoder().encode(text)];
  let version = 1;
  while (version <= MAX_VERSION && dataCodewords(version) * 8 < 4 + (version <= 9 ? 8 : 16) + bytes.length * 8) version++;
  if (version > MAX_VERSION) throw new Error(`too long for a QR code here: ${bytes.length} bytes`);
  const codewords = interleave(encodeData(bytes, version), version);
  let best = null;
  for (let mask = 0; mask < 8; mask++) {
    const symbol = new Symbol(version);
    symbol.drawFunctionPatterns();
    symbol.drawCodewords(codewords);
    symbol.applyMask(mask);
    symbol.drawFormat(mask);
    const score = symbol.penalty();
    if (!best || score < best.score) best = { score, symbol };
  }
  return best.symbol.dark;
}

// An <svg> of the code: one path of unit squares, a light quiet zone four modules wide.
export function qrSVG(text, pixels = 240) {
  const modules = qrModules(text);
  const size = modules.length + 8;
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  for (const [k, v] of Object.entries({ viewBox: `0 0 ${size} ${size}`, width: pixels, height: pixels, role: 'img', 'shape-rendering': 'crispEdges' })) svg.setAttribute(k, v);
  const background = document.createElementNS(ns, 'rect');
  for (const [k, v] of Object.entries({ width: size, height: size, fill: '#fff' })) background.setAttribute(k, v);
  let d = '';
  modules.forEach((row, y) => row.forEach((dark, x) => { if (dark) d += `M${x + 4} ${y + 4}h1v1h-1z`; }));
  const path = document.createElementNS(ns, 'path');
  path.setAttribute('d', d);
  path.setAttribute('fill', '#000');
  svg.append(background, path);
  return svg;
}
