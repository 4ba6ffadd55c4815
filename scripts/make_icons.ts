/**
 * Write the app icons `static/icon-192.png` and `static/icon-512.png` (the web app manifest's), drawn here so
 * no image tool is needed: a blue square with a white ring, safe for "maskable" cropping.
 * Run: `deno run --allow-write scripts/make_icons.ts`.
 */
import { deflateSync } from "node:zlib";

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, data.length);
  out.set(new TextEncoder().encode(type), 4);
  out.set(data, 8);
  view.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)));
  return out;
}

/** A `size`×`size` RGB PNG of the icon. */
export function icon(size: number): Uint8Array {
  const rows = new Uint8Array(size * (1 + size * 3));
  const c = size / 2;
  for (let y = 0; y < size; y++) {
    const row = y * (1 + size * 3);
    rows[row] = 0; // filter: none
    for (let x = 0; x < size; x++) {
      const r = Math.hypot(x + 0.5 - c, y + 0.5 - c) / size;
      const ring = r > 0.17 && r < 0.27;
      const [R, G, B] = ring ? [255, 255, 255] : [0x3b, 0x5b, 0xdb];
      rows.set([R, G, B], row + 1 + x * 3);
    }
  }
  const header = new Uint8Array(13);
  const view = new DataView(header.buffer);
  view.setUint32(0, size);
  view.setUint32(4, size);
  header.set([8, 2, 0, 0, 0], 8); // 8-bit RGB, no interlace
  const signature = new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10]);
  const parts = [
    signature,
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(rows)),
    chunk("IEND", new Uint8Array()),
  ];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

if (import.meta.main) {
  for (const size of [192, 512]) {
    const path = new URL(`../static/icon-${size}.png`, import.meta.url);
    await Deno.writeFile(path, icon(size));
    console.log(`wrote ${path.pathname}`);
  }
}
