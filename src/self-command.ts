/**
 * The command that runs this program again with `args` (`serve` for a worker, `__thumbnail` for
 * a thumbnail): the executable alone when compiled (`bun build --compile`, whose script lives
 * under `/$bunfs/`), else the runtime and the script.
 */
export function selfCommand(args: string[]): string[] {
  const script = process.argv[1];
  return script === undefined || script.startsWith("/$bunfs/") ? [process.execPath, ...args] : [process.execPath, script, ...args];
}
