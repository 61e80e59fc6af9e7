// Encodes texts of every length band (QR versions 1-13) with the console's QR module
// (Sources/ServerHTTP/Console/qr.js), draws each as a PGM image and decodes it with an outside
// decoder (zbarimg, Debian's zbar-tools). Prints a line per failure and "qr: N decoded, N
// failed"; exits 1 on any failure.
//
//   node Tests/Console/qr-decode.mjs
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { qrModules } from '../../Sources/ServerHTTP/Console/qr.js';

const link = 'https://sync.example.org:7421/join#s=psi_' + 'a1'.repeat(32) + '&p=7420&f=' + '0f'.repeat(32);
const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&()*+,;=%';
const texts = [link, 'x'];
for (const length of [13, 14, 25, 26, 40, 60, 84, 85, 100, 106, 120, 140, 152, 160, 180, 200, 213, 230, 250, 270, 287, 300, 320, 331]) {
  texts.push(Array.from({ length }, (_, i) => alphabet[(i * 7 + length) % alphabet.length]).join(''));
}

const folder = mkdtempSync(join(tmpdir(), 'plistsync-qr-'));
let decoded = 0;
let failed = 0;
const sizes = new Set();
for (const [n, text] of texts.entries()) {
  const modules = qrModules(text);
  sizes.add(modules.length);
  const scale = 4, quiet = 4, size = (modules.length + 2 * quiet) * scale;
  const rows = [];
  for (let y = 0; y < size; y++) {
    const row = [];
    for (let x = 0; x < size; x++) {
      const my = Math.floor(y / scale) - quiet, mx = Math.floor(x / scale) - quiet;
      row.push(my >= 0 && mx >= 0 && my < modules.length && mx < modules.length && modules[my][mx] ? 0 : 255);
    }
    rows.push(row.join(' '));
  }
  const file = join(folder, `code${n}.pgm`);
  writeFileSync(file, `P2\n${size} ${size}\n255\n${rows.join('\n')}\n`);
  let read = '';
  try { read = execFileSync('zbarimg', ['-q', '--raw', file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).replace(/\n$/, ''); } catch { read = '(nothing decoded)'; }
  if (read === text) decoded++;
  else { failed++; console.log(`length ${text.length} (${modules.length}×${modules.length}): decoded ${JSON.stringify(read.slice(0, 60))}`); }
}
rmSync(folder, { recursive: true });
let tooLong = false;
try { qrModules('z'.repeat(335)); } catch { tooLong = true; }
if (!tooLong) { failed++; console.log('335 bytes should be refused (versions 1-13 only)'); }
console.log(`qr: ${decoded} decoded, ${failed} failed; sizes ${[...sizes].sort((a, b) => a - b).join(', ')}`);
process.exit(failed === 0 ? 0 : 1);
