/**
 * Local trees of files for the sync tests (rclone over WebDAV, the S3 clients): one written
 * deterministically, and any directory read back as relative path → bytes to compare with.
 */
import fs from "node:fs";
import path from "node:path";

/** Every file under `dir`: relative path → bytes. */
export function treeOf(dir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const e of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (e.isFile()) out.set(path.relative(dir, path.join(e.parentPath, e.name)), fs.readFileSync(path.join(e.parentPath, e.name)));
  }
  return out;
}

/** `size` deterministic bytes, different for each `seed`. */
export function bytesOf(size: number, seed: number): Buffer {
  const b = Buffer.alloc(size);
  for (let i = 0; i < size; i++) b[i] = (i * 31 + seed * 7) & 0xff;
  return b;
}

/**
 * Writes `top` × `middle` × `files` files in three levels (`level1-A/level2 B/file C é.bin`:
 * a space and a non-ASCII letter in every file's name), the n-th file `sizeOf(n)` bytes.
 */
export function writeTree(dir: string, shape: { top: number; middle: number; files: number; sizeOf: (n: number) => number }): void {
  let n = 0;
  for (let a = 0; a < shape.top; a++) {
    for (let b = 0; b < shape.middle; b++) {
      fs.mkdirSync(path.join(dir, `level1-${a}`, `level2 ${b}`), { recursive: true });
      for (let c = 0; c < shape.files; c++) {
        fs.writeFileSync(path.join(dir, `level1-${a}`, `level2 ${b}`, `file ${c} é.bin`), bytesOf(shape.sizeOf(n), n));
        n++;
      }
    }
  }
}
