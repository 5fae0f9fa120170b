/** Test support: a self-signed TLS certificate for localhost, made by the real openssl. */
import fs from "node:fs";
import path from "node:path";

/** Where Debian installs openssl when it is not on PATH. */
export const OPENSSL = Bun.which("openssl") ?? "/usr/bin/openssl";

/**
 * Writes `dir/cert.pem` and `dir/key.pem`: a self-signed certificate (EC P-256, 1 day) for
 * `localhost` and `127.0.0.1` (subjectAltName, which TLS clients check since RFC 6125), which is
 * its own CA: clients trust it by passing `pem` as their CA.
 * @throws Error with openssl's output when it fails
 */
export function selfSignedCert(dir: string): { cert: string; key: string; pem: string } {
  const cert = path.join(dir, "cert.pem");
  const key = path.join(dir, "key.pem");
  const run = Bun.spawnSync(
    [OPENSSL, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj", "/CN=localhost",
      "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", key, "-out", cert],
    { stdout: "pipe", stderr: "pipe" },
  );
  if (run.exitCode !== 0) throw new Error(`openssl req -x509 failed: ${run.stderr.toString()}`);
  return { cert, key, pem: fs.readFileSync(cert, "utf8") };
}
