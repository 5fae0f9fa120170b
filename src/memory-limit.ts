/**
 * How much memory this process may use: the machine's (os.totalmem) or, when smaller, the limit
 * of the Linux control group it runs in (a container, a systemd unit with MemoryMax=, a NAS app
 * slot). WORKERS' default weighs it (config.ts, CONTRACT §10).
 *
 * Where the limit lives (Linux's Documentation/admin-guide/cgroup-v2.rst and cgroup-v1/memory.rst):
 * `/proc/self/cgroup` names the process's group in each hierarchy (`0::/path` for cgroup v2,
 * `N:memory:/path` for v1's memory controller); `/proc/self/mountinfo` says where each hierarchy
 * is mounted and which of its groups the mount shows (its root, `/` unless the mount is of a
 * sub-tree, as in some containers). The limit is `memory.max` (v2, `max` for none) or
 * `memory.limit_in_bytes` (v1, a number near 2^63 for none) in the group's directory. A group's
 * ancestors limit it too, so every directory from the group up to the mount's root is read and
 * the smallest limit counts. Hosts with both (hybrid) give the smaller of the two.
 */
import fs from "node:fs";
import os from "node:os";

/** Reads a file's text, or undefined when it cannot be read (missing, not Linux, no permission). */
export type ReadText = (path: string) => string | undefined;

function readText(path: string): string | undefined {
  try {
    return fs.readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

/**
 * The memory this process may use, bytes: the smaller of the machine's memory and its control
 * group's limit (none: the machine's).
 * @param read reads `/proc` and `/sys` files (tests give it a directory of their own)
 */
export function availableMemory(read: ReadText = readText): number {
  const limit = cgroupMemoryLimit(read);
  return limit === undefined ? os.totalmem() : Math.min(os.totalmem(), limit);
}

/**
 * The smallest memory limit of this process's control groups and their ancestors, bytes;
 * undefined when no group sets one (or the files are not there: not Linux, no cgroup mounted).
 */
export function cgroupMemoryLimit(read: ReadText = readText): number | undefined {
  const cgroup = read("/proc/self/cgroup");
  const mountinfo = read("/proc/self/mountinfo");
  if (cgroup === undefined || mountinfo === undefined) return undefined;
  let smallest: number | undefined;
  for (const file of memoryLimitFiles(cgroup, mountinfo)) {
    const text = read(file);
    const limit = text === undefined ? undefined : parseMemoryLimit(text);
    if (limit !== undefined && (smallest === undefined || limit < smallest)) smallest = limit;
  }
  return smallest;
}

/**
 * The files that may hold a memory limit on this process: for each hierarchy it is in (v2, and
 * v1's memory controller) that is mounted, the limit file of its group and of every ancestor up
 * to the mount's root, the group's own first.
 * @param cgroup the text of `/proc/self/cgroup` (proc(5): `hierarchy-ID:controllers:path` lines)
 * @param mountinfo the text of `/proc/self/mountinfo` (proc(5): `… root mount-point … - fstype source options`)
 */
export function memoryLimitFiles(cgroup: string, mountinfo: string): string[] {
  const mounts = parseMountinfo(mountinfo);
  const files: string[] = [];
  for (const line of cgroup.split("\n")) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line.trim());
    if (m === null) continue;
    const [, id, controllers, groupPath] = m as unknown as [string, string, string, string];
    const v2 = id === "0" && controllers === "";
    if (!v2 && !controllers.split(",").includes("memory")) continue;
    const mount = mounts.find((t) => (v2 ? t.fstype === "cgroup2" : t.fstype === "cgroup" && t.options.split(",").includes("memory")));
    if (mount === undefined) continue;
    const name = v2 ? "memory.max" : "memory.limit_in_bytes";
    // The group's path as seen from the mount: below the mount's root, or (a mount of another
    // namespace's tree, as in a container) the mount's root itself.
    const below = mount.root === "/" ? groupPath : groupPath === mount.root || groupPath.startsWith(`${mount.root}/`) ? groupPath.slice(mount.root.length) : "";
    const parts = below.split("/").filter((p) => p !== "" && p !== "." && p !== "..");
    for (let n = parts.length; n >= 0; n--) files.push([mount.point, ...parts.slice(0, n), name].join("/"));
  }
  return files;
}

/**
 * A limit file's value, bytes: `memory.max` holds a number or `max`; `memory.limit_in_bytes`
 * a number, near 2^63 when unlimited (kept: it is larger than any machine's memory).
 * @returns undefined for `max` or anything that is not a whole number
 */
export function parseMemoryLimit(text: string): number | undefined {
  const t = text.trim();
  return /^\d+$/.test(t) ? Number(t) : undefined;
}

interface Mount {
  /** The directory of the hierarchy the mount shows. */
  root: string;
  /** Where it is mounted. */
  point: string;
  fstype: string;
  /** The super-block options: for cgroup v1, the controllers (`rw,memory`). */
  options: string;
}

/** The mounts of a mountinfo text; the octal escapes of paths (`\040` for a space) decoded. */
function parseMountinfo(text: string): Mount[] {
  const mounts: Mount[] = [];
  const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  for (const line of text.split("\n")) {
    const [before, after] = line.split(" - ");
    if (before === undefined || after === undefined) continue;
    const f = before.split(" ");
    const [fstype, , options] = after.split(" ");
    if (f.length < 5 || fstype === undefined) continue;
    mounts.push({ root: unescape(f[3]!), point: unescape(f[4]!), fstype, options: options ?? "" });
  }
  return mounts;
}
