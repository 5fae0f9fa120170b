// test-lists: default
// rclone's webdav backend (vendor other) against /dav/ (CONTRACT §12): a tree of 200 files in
// three levels synced up, checked, synced back down byte for byte, then a change on each side
// synced the other way. rclone is configured by flags only (no config file is written).
import { afterAll, beforeAll, describe, expect } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { davFetch, run, which } from "../support/dav.ts";
import { treeOf, writeTree } from "../support/trees.ts";
import { startServer, tempDir, type RunningServer } from "../support/server.ts";
import { testNeeding } from "../support/tools.ts";

const rcloneTest = testNeeding("the rclone tests", which("rclone") === null ? ["rclone (apt-get install rclone)"] : []);

let server: RunningServer;
let key: string;

beforeAll(async () => {
  server = await startServer({ checkResponses: false });
  key = await server.mintKey("rclone@example.com");
});
afterAll(() => server[Symbol.asyncDispose]());

/** The tree: 4 × 5 × 10 = 200 files, sizes from 0 to ~3 MiB. */
const TREE = { top: 4, middle: 5, files: 10, sizeOf: (n: number) => (n === 7 ? 3 * 1024 * 1024 + 17 : n % 13 === 0 ? 0 : (n * 7919) % 20_000) };

describe("rclone (webdav backend)", () => {
  rcloneTest(
    "syncs a tree of 200 files up and back down byte for byte, then a change on each side the other way",
    async () => {
      using tmp = tempDir("cubby-rclone-");
      const up = path.join(tmp.path, "up");
      const down = path.join(tmp.path, "down");
      fs.mkdirSync(down);
      writeTree(up, TREE);
      const obscured = (await run("rclone", ["obscure", key])).stdout.trim();
      const env = { RCLONE_CONFIG: path.join(tmp.path, "no-such-rclone.conf"), HOME: tmp.path };
      const flags = ["--webdav-url", `${server.url}/dav/`, "--webdav-vendor", "other", "--webdav-user", "anyone", "--webdav-pass", obscured, "--retries", "1"];
      const rclone = async (...args: string[]) => {
        const r = await run("rclone", [...args, ...flags], { env, timeoutMs: 120_000 });
        if (r.code !== 0) throw new Error(`rclone ${args.join(" ")} exited ${r.code}:\n${r.stderr}`);
        return r;
      };

      await rclone("sync", up, ":webdav:tree");
      const check = await rclone("check", up, ":webdav:tree");
      expect(check.stderr).toContain("0 differences found");
      expect(check.stderr).toContain("200 matching files");
      await rclone("sync", ":webdav:tree", down);
      const local = treeOf(up);
      expect(local.size).toBe(200);
      expect(treeOf(down)).toEqual(local);

      // A change on the local side goes up, replacing that file's content.
      const changed = path.join("level1-2", "level2 3", "file 4 é.bin");
      fs.writeFileSync(path.join(up, changed), "changed locally, and longer than before? no: different\n");
      await rclone("sync", up, ":webdav:tree");
      const got = await davFetch(server.url, key, `/dav/tree/${changed.split(path.sep).map(encodeURIComponent).join("/")}`);
      expect(await got.text()).toBe("changed locally, and longer than before? no: different\n");

      // A change on the server side comes down.
      const remote = path.join("level1-0", "level2 0", "file 9 é.bin");
      const put = await davFetch(server.url, key, `/dav/tree/${remote.split(path.sep).map(encodeURIComponent).join("/")}`, { method: "PUT", body: "changed on the server\n" });
      expect(put.status).toBe(204);
      await rclone("sync", ":webdav:tree", down);
      const after = treeOf(up);
      after.set(remote, Buffer.from("changed on the server\n"));
      expect(treeOf(down)).toEqual(after);
    },
    240_000,
  );
});
