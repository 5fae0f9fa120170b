// Test support (bun test only: server.ts needs Bun; the Playwright tests import idp.ts alone).
import { freePort, IDP_CLIENT, startIdp, type RunningIdp } from "./idp.ts";
import { startServer, type RunningServer } from "./server.ts";

/**
 * A cubby server that signs in through a provider of its own, on a port chosen before start
 * (the provider must know the redirect URI); disposing stops both.
 * @param env more of the server's environment
 */
export async function startSignInServer(env: Record<string, string> = {}): Promise<{ idp: RunningIdp; server: RunningServer; host: string } & AsyncDisposable> {
  const port = await freePort();
  const idp = await startIdp([`http://localhost:${port}/auth/idp/callback`]);
  try {
    const server = await startServer({ port, env: { IDP_ISSUER: idp.issuer, ...IDP_CLIENT, ...env } });
    return {
      idp,
      server,
      host: `localhost:${port}`,
      async [Symbol.asyncDispose]() {
        await server[Symbol.asyncDispose]();
        await idp[Symbol.asyncDispose]();
      },
    };
  } catch (err) {
    await idp[Symbol.asyncDispose]();
    throw err;
  }
}
