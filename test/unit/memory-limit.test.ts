// The memory probe (src/memory-limit.ts): which cgroup files hold this process's memory limit,
// read from /proc/self/cgroup and /proc/self/mountinfo as cgroup v2, v1 and hybrid hosts and
// containers write them (proc(5), the kernel's cgroup-v2.rst and cgroup-v1/memory.rst).
import { describe, expect, test } from "bun:test";
import os from "node:os";
import { availableMemory, cgroupMemoryLimit, memoryLimitFiles, parseMemoryLimit } from "../../src/memory-limit.ts";

const V2_MOUNT = "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot";
const V1_MEMORY_MOUNT = "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory";
const V1_CPU_MOUNT = "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct";
const UNIFIED_MOUNT = "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw";
const ROOT_MOUNT = "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw";

describe("memoryLimitFiles", () => {
  test.each([
    [
      "cgroup v2, a systemd service",
      "0::/system.slice/cubby.service\n",
      [ROOT_MOUNT, V2_MOUNT],
      ["/sys/fs/cgroup/system.slice/cubby.service/memory.max", "/sys/fs/cgroup/system.slice/memory.max", "/sys/fs/cgroup/memory.max"],
    ],
    ["cgroup v2 in a container's namespace (its group is the mount's root)", "0::/\n", [ROOT_MOUNT, V2_MOUNT], ["/sys/fs/cgroup/memory.max"]],
    [
      "cgroup v1, the memory controller's group (other controllers ignored)",
      "5:cpu,cpuacct:/a\n4:memory:/process_api/b2016\n1:name=systemd:/\n",
      [V1_CPU_MOUNT, V1_MEMORY_MOUNT],
      ["/sys/fs/cgroup/memory/process_api/b2016/memory.limit_in_bytes", "/sys/fs/cgroup/memory/process_api/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.limit_in_bytes"],
    ],
    [
      "hybrid: v1 memory and an unified v2 mount, both read",
      "4:memory:/x\n0::/y\n",
      [V1_MEMORY_MOUNT, UNIFIED_MOUNT],
      ["/sys/fs/cgroup/memory/x/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/unified/y/memory.max", "/sys/fs/cgroup/unified/memory.max"],
    ],
    [
      "cgroup v1 in a container whose mount shows only its own sub-tree",
      "4:memory:/docker/abc\n",
      ["35 31 0:32 /docker/abc /sys/fs/cgroup/memory ro,relatime - cgroup cgroup rw,memory"],
      ["/sys/fs/cgroup/memory/memory.limit_in_bytes"],
    ],
    [
      "a mount of another namespace's tree: its root only",
      "0::/elsewhere\n",
      ["30 23 0:26 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw"],
      ["/sys/fs/cgroup/memory.max"],
    ],
    ["a mount point with a space (mountinfo's octal escape)", "0::/a\n", ["30 23 0:26 / /mnt/c\\040g rw - cgroup2 cgroup2 rw"], ["/mnt/c g/a/memory.max", "/mnt/c g/memory.max"]],
    ["no cgroup file system mounted", "0::/a\n", [ROOT_MOUNT], []],
    ["cgroup v1 without the memory controller", "3:cpu:/a\n", [V1_CPU_MOUNT], []],
  ])("%s", (_, cgroup, mounts, files) => {
    expect(memoryLimitFiles(cgroup, mounts.join("\n") + "\n")).toEqual(files);
  });
});

test.each([
  ["1073741824\n", 1073741824],
  ["max\n", undefined],
  ["9223372036854771712\n", 9223372036854771712],
  ["", undefined],
  ["-1", undefined],
])("parseMemoryLimit(%p) = %p", (text, bytes) => expect(parseMemoryLimit(text)).toBe(bytes));

describe("cgroupMemoryLimit", () => {
  const files = (entries: Record<string, string>) => (p: string) => entries[p];

  test("the smallest limit on the way up counts: a slice's limit binds its services", () => {
    const read = files({
      "/proc/self/cgroup": "0::/nas.slice/cubby.service\n",
      "/proc/self/mountinfo": V2_MOUNT + "\n",
      "/sys/fs/cgroup/nas.slice/cubby.service/memory.max": "max\n",
      "/sys/fs/cgroup/nas.slice/memory.max": "1073741824\n",
    });
    expect(cgroupMemoryLimit(read)).toBe(1024 ** 3);
  });

  test("hybrid hosts: the smaller of the v1 and v2 limits", () => {
    const read = files({
      "/proc/self/cgroup": "4:memory:/x\n0::/y\n",
      "/proc/self/mountinfo": [V1_MEMORY_MOUNT, UNIFIED_MOUNT].join("\n"),
      "/sys/fs/cgroup/memory/x/memory.limit_in_bytes": "2147483648\n",
      "/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
      "/sys/fs/cgroup/unified/y/memory.max": "1610612736\n",
    });
    expect(cgroupMemoryLimit(read)).toBe(1.5 * 1024 ** 3);
  });

  test("no limit anywhere, or no /proc (not Linux): undefined, and the machine's memory is what there is", () => {
    expect(cgroupMemoryLimit(files({ "/proc/self/cgroup": "0::/\n", "/proc/self/mountinfo": V2_MOUNT, "/sys/fs/cgroup/memory.max": "max\n" }))).toBeUndefined();
    expect(cgroupMemoryLimit(files({}))).toBeUndefined();
    expect(availableMemory(files({}))).toBe(os.totalmem());
  });

  test("a cgroup limit larger than the machine: the machine's memory", () => {
    const read = files({ "/proc/self/cgroup": "0::/\n", "/proc/self/mountinfo": V2_MOUNT, "/sys/fs/cgroup/memory.max": String(os.totalmem() * 4) });
    expect(availableMemory(read)).toBe(os.totalmem());
  });
});
