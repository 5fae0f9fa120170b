/**
 * CRC32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78; RFC 3720 §B.4) by
 * slicing-by-16 (Intel's table method, 16 tables of 256 entries, one lookup per byte) in a small
 * WebAssembly module assembled here, in memory, at module load.
 *
 * Why WebAssembly and not the `@node-rs/crc32` native addon used before: a compiled executable
 * can only load a native addon from a file, so Bun wrote it into TMPDIR at every start and
 * dlopen()ed it there, which fails when TMPDIR is mounted noexec (issue 25, item 7). Nothing here
 * is written to disk. `bun scripts/bench/checksum.ts` (2 cores, 2026-11-26): on 1 MiB buffers
 * 2.2–2.6 GB/s, 0.43–0.48× the addon (which uses the CPU's CRC32 instruction) and 1.2–1.4× the
 * same slicing-by-16 in TypeScript; a 1 GiB upload 0.89× the addon's MB/s, +17 % server CPU.
 * WebAssembly has no carry-less multiply or CRC instruction, so a table method is the best
 * it can do.
 */

const POLY_REFLECTED = 0x82f63b78;

/** 16 tables × 256 entries: T[0] the byte-wise table, T[k][i] = T[k-1][i] advanced by one zero byte. */
function slicingTables(): Int32Array {
  const t = new Int32Array(16 * 256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLY_REFLECTED : c >>> 1;
    t[i] = c;
  }
  for (let k = 1; k < 16; k++) {
    for (let i = 0; i < 256; i++) {
      const prev = t[(k - 1) * 256 + i]!;
      t[k * 256 + i] = (prev >>> 8) ^ t[prev & 0xff]!;
    }
  }
  return t;
}

// --- the module's binary encoding (WebAssembly Core Specification 2.0, §5) ---
const uleb = (n: number): number[] => {
  const out: number[] = [];
  do {
    const low = n & 0x7f;
    n >>>= 7;
    out.push(n === 0 ? low : low | 0x80);
  } while (n !== 0);
  return out;
};
const sleb = (n: number): number[] => {
  const out: number[] = [];
  for (;;) {
    const low = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (low & 0x40) === 0) || (n === -1 && (low & 0x40) !== 0)) return [...out, low];
    out.push(low | 0x80);
  }
};
const vec = (items: number[][]): number[] => [...uleb(items.length), ...items.flat()];
const section = (id: number, body: number[]): number[] => [id, ...uleb(body.length), ...body];
const name = (s: string): number[] => vec([...s].map((ch) => [ch.charCodeAt(0)]));

const I32 = 0x7f;
const op = {
  block: [0x02, 0x40],
  loop: [0x03, 0x40],
  end: [0x0b],
  br: (depth: number) => [0x0c, depth],
  brIf: (depth: number) => [0x0d, depth],
  get: (local: number) => [0x20, local],
  set: (local: number) => [0x21, local],
  /** i32.load with alignment 4 and a constant byte offset added to the address on the stack */
  load: (offset: number) => [0x28, 2, ...uleb(offset)],
  /** i32.load8_u with a constant byte offset */
  load8: (offset = 0) => [0x2d, 0, ...uleb(offset)],
  const: (n: number) => [0x41, ...sleb(n)],
  eqz: [0x45],
  ltU: [0x49],
  add: [0x6a],
  sub: [0x6b],
  and: [0x71],
  xor: [0x73],
  shl: [0x74],
  shrU: [0x76],
};

/** Where the module's memory holds the tables (16 KiB) and the window input is copied into. */
const TABLES = 0;
const WINDOW_AT = 16 * 1024;
const WINDOW = 64 * 1024;
const PAGES = Math.ceil((WINDOW_AT + WINDOW) / 65536);

// update(crc, at, length) → crc: locals 0 crc, 1 at, 2 length, 3 word.
const [CRC, AT, LEN, WORD] = [0, 1, 2, 3];
/** T[table][byte `b` of WORD], the byte's index pre-scaled by 4 in the shift and mask. */
const lookupInWord = (b: number, table: number) => [
  ...op.get(WORD),
  ...(b === 0 ? [...op.const(2), ...op.shl] : [...op.const(8 * b - 2), ...op.shrU]),
  ...op.const(0x3fc),
  ...op.and,
  ...op.load(TABLES + table * 1024),
];
/**
 * T[table][the byte at `at + offset`]. A byte load instead of a shift and a mask of a word
 * loaded once: ~20 % faster under JavaScriptCore (scripts/bench/checksum.ts's candidates).
 */
const lookupByte = (offset: number, table: number) => [...op.get(AT), ...op.load8(offset), ...op.const(2), ...op.shl, ...op.load(TABLES + table * 1024)];
/** One 16-byte block: crc = T15[b0^c0] ^ T14[b1^c1] ^ T13[b2^c2] ^ T12[b3^c3] ^ T11[b4] ^ … ^ T0[b15]. */
const block = [
  ...op.get(AT), ...op.load(0), ...op.get(CRC), ...op.xor, ...op.set(WORD),
  ...lookupInWord(0, 15), ...lookupInWord(1, 14), ...op.xor, ...lookupInWord(2, 13), ...op.xor, ...lookupInWord(3, 12), ...op.xor,
  ...Array.from({ length: 12 }, (_, i) => [...lookupByte(4 + i, 11 - i), ...op.xor]).flat(),
  ...op.set(CRC),
];
const advance = (n: number) => [...op.get(AT), ...op.const(n), ...op.add, ...op.set(AT), ...op.get(LEN), ...op.const(n), ...op.sub, ...op.set(LEN)];
const body = [
  ...vec([[1, I32]]), // one more i32 local: WORD
  ...op.get(CRC), ...op.const(-1), ...op.xor, ...op.set(CRC),
  // 16 bytes at a time
  ...op.block, ...op.loop,
  ...op.get(LEN), ...op.const(16), ...op.ltU, ...op.brIf(1),
  ...block,
  ...advance(16), ...op.br(0),
  ...op.end, ...op.end,
  // the last 0–15 bytes one at a time: crc = T0[(crc ^ byte) & 0xff] ^ (crc >>> 8)
  ...op.block, ...op.loop,
  ...op.get(LEN), ...op.eqz, ...op.brIf(1),
  ...op.get(CRC), ...op.get(AT), ...op.load8(), ...op.xor, ...op.const(0xff), ...op.and, ...op.const(2), ...op.shl, ...op.load(TABLES),
  ...op.get(CRC), ...op.const(8), ...op.shrU, ...op.xor, ...op.set(CRC),
  ...advance(1), ...op.br(0),
  ...op.end, ...op.end,
  ...op.get(CRC), ...op.const(-1), ...op.xor,
  ...op.end,
];
const MODULE = new Uint8Array([
  ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00], // "\0asm", version 1
  ...section(1, vec([[0x60, ...vec([[I32], [I32], [I32]]), ...vec([[I32]])]])), // type 0: (i32, i32, i32) → i32
  ...section(3, vec([[0]])), // function 0 has type 0
  ...section(5, vec([[0x00, ...uleb(PAGES)]])), // one memory, PAGES × 64 KiB, no maximum
  ...section(7, vec([[...name("update"), 0x00, 0], [...name("memory"), 0x02, 0]])),
  ...section(10, vec([[...uleb(body.length), ...body]])),
]);

const instance = new WebAssembly.Instance(new WebAssembly.Module(MODULE));
const memory = new Uint8Array((instance.exports.memory as WebAssembly.Memory).buffer);
new Int32Array(memory.buffer, TABLES, 16 * 256).set(slicingTables());
const update = instance.exports.update as (crc: number, at: number, length: number) => number;

/**
 * Continues a CRC32C over `bytes`.
 * @param state the CRC32C of the bytes before (0 for none), as an unsigned or signed 32-bit number
 * @returns the CRC32C of the bytes before followed by `bytes`, unsigned (0 … 2³²−1)
 */
export function crc32c(bytes: Uint8Array, state = 0): number {
  let crc = state | 0;
  for (let i = 0; i < bytes.byteLength; i += WINDOW) {
    const part = bytes.subarray(i, i + WINDOW);
    memory.set(part, WINDOW_AT);
    crc = update(crc, WINDOW_AT, part.byteLength);
  }
  return crc >>> 0;
}

/** a·b mod P over GF(2), both reflected (bit 31 is x⁰), as in zlib's crc32.c multmodp. */
function multModP(a: number, b: number): number {
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if (a & m) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = b & 1 ? (b >>> 1) ^ POLY_REFLECTED : b >>> 1;
  }
  return p >>> 0;
}

/** x^(2^k) mod P for k = 0 … 31 (reflected), as zlib's x2n_table. */
const X2N = (() => {
  const table = new Array<number>(32);
  let p = 0x40000000; // x¹
  for (let k = 0; k < 32; k++) {
    table[k] = p;
    p = multModP(p, p);
  }
  return table;
})();

/**
 * The CRC32C of two byte strings one after the other, from each one's CRC32C and the second's
 * length (zlib's crc32_combine: crc1·x^(8·len2) mod P, xor crc2), so a checksum carried per
 * part needs no byte read again.
 * @param crc1 CRC32C of the first bytes (unsigned or signed 32-bit)
 * @param crc2 CRC32C of the second bytes
 * @param length2 bytes in the second (a safe integer ≥ 0)
 * @returns the CRC32C of both, unsigned
 */
export function crc32cCombine(crc1: number, crc2: number, length2: number): number {
  let shift = 0x80000000; // x⁰
  let k = 3; // x^(8n) = x^(2^3 · n)
  for (let n = length2; n > 0; n = Math.floor(n / 2), k++) {
    if (n % 2 === 1) shift = multModP(X2N[k % 32]!, shift);
  }
  return (multModP(shift, crc1 >>> 0) ^ (crc2 >>> 0)) >>> 0;
}
