// A real OpenID provider for tests: oidc-provider on a loopback port with dev interactions
// (an HTML login form that accepts any password). Prints "issuer=<url>" when ready.
// Usage: bun test/support/idp-server.ts REDIRECT_URI [REDIRECT_URI…]
import http from "node:http";
import type { AddressInfo } from "node:net";
import Provider from "oidc-provider";

/** Test accounts: the login name is the account ID. */
export const ACCOUNTS: Record<string, { email: string; email_verified: boolean; name: string }> = {
  alice: { email: "alice@example.com", email_verified: true, name: "Alice" },
  bob: { email: "bob@example.com", email_verified: true, name: "Bob" },
  carol: { email: "Carol@EXAMPLE.COM", email_verified: true, name: "Carol" },
  mallory: { email: "mallory@example.com", email_verified: false, name: "Mallory" },
  eve: { email: "eve@elsewhere.org", email_verified: true, name: "Eve" },
  // One per sharing browser test (test/e2e/sharing.e2e.ts, folder-share.e2e.ts, sections.e2e.ts), so each starts with an empty account.
  ...Object.fromEntries(["dana", "erin", "frank", "gina", "hana", "ivan", "kate", "nora", "olga", "root"].map((n) => [n, { email: `${n}@example.com`, email_verified: true, name: n }])),
};

if (import.meta.main) {
  const server = http.createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: "cubby",
        client_secret: "cubby-test-secret",
        redirect_uris: process.argv.slice(2),
        grant_types: ["authorization_code"],
        response_types: ["code"],
      },
    ],
    async findAccount(_ctx, id) {
      const account = ACCOUNTS[id];
      if (account === undefined) return undefined;
      return { accountId: id, claims: async () => ({ sub: id, ...account }) };
    },
    claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"] },
    features: { devInteractions: { enabled: true } },
    cookies: { keys: ["cubby-test-cookie-key"] },
    pkce: { required: () => true },
  });
  provider.on("server_error", (_ctx, err) => console.error("idp server_error", err));
  server.on("request", provider.callback());
  console.log(`issuer=${issuer}`);
}
