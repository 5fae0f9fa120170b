/**
 * The server's side of a test's TCP connection as the kernel sees it, from `ss` (iproute2): which
 * process holds it, and how many bytes its kernel holds unsent (a client that reads late).
 */

/**
 * The accepted socket serving the connection from local port `clientPort` to `serverPort`.
 * @returns `sendQueue`: the Send-Q in bytes; `pid`: the process holding the socket (undefined
 *   until its accept() took it); undefined when the kernel lists no such established connection
 */
export function serverSide(serverPort: number, clientPort: number): { sendQueue: number; pid: number | undefined } | undefined {
  const out = Bun.spawnSync(["ss", "-tnpH", "state", "established", `( sport = :${serverPort} and dport = :${clientPort} )`]).stdout.toString().trim();
  if (out === "") return undefined;
  // Columns without the state: Recv-Q Send-Q Local:Port Peer:Port [users:(("name",pid=N,fd=M))].
  const pid = /pid=(\d+)/.exec(out);
  return { sendQueue: Number(out.split(/\s+/)[1]), pid: pid === null ? undefined : Number(pid[1]) };
}
