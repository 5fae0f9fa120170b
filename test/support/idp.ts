/**
 * Test support for sign-in: starts the real OpenID provider (test/support/idp-server.ts) as a
 * child process, and drives its login form over HTTP the way a browser would. Plain Node.js as
 * well as Bun (the browser tests start the provider with it).
 */
import path from "node:path";
import { BUN, cleanEnv, launch, type Launched } from "./launch.ts";

export { freePort } from "./processes.ts";

export const IDP_CLIENT = { IDP_CLIENT_ID: "cubby", IDP_CLIENT_SECRET: "cubby-test-secret" };

export interface RunningIdp extends AsyncDisposable {
  issuer: string;
  proc: Launched;
}

/**
 * Starts the provider (test/support/idp-server.ts, through launch.ts) on a loopback port of its
 * own, accepting the given redirect URIs, and waits until it prints its issuer URL.
 */
export async function startIdp(redirectUris: string[]): Promise<RunningIdp> {
  const proc = await launch({
    name: "the OpenID provider",
    command: [BUN, path.join(import.meta.dirname, "idp-server.ts"), ...redirectUris],
    env: cleanEnv(),
    ready: /issuer=(\S+)/,
  });
  return {
    issuer: proc.readyMatch![1]!,
    proc,
    [Symbol.asyncDispose]: () => proc.kill9(),
  };
}

/** A minimal browser: follows redirects by hand and keeps cookies per host. */
export class Browser {
  private jars = new Map<string, Map<string, string>>();

  cookie(host: string, name: string): string | undefined {
    return this.jars.get(host)?.get(name);
  }

  setCookie(host: string, name: string, value: string): void {
    if (!this.jars.has(host)) this.jars.set(host, new Map());
    this.jars.get(host)!.set(name, value);
  }

  /** One request with this browser's cookies; stores Set-Cookie. Does not follow redirects. */
  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const u = new URL(url);
    const jar = this.jars.get(u.host) ?? new Map<string, string>();
    const headers = new Headers(init.headers);
    if (jar.size > 0) headers.set("cookie", [...jar].map(([k, v]) => `${k}=${v}`).join("; "));
    const res = await fetch(url, { ...init, headers, redirect: "manual" });
    for (const c of res.headers.getSetCookie()) {
      const [pair, ...attrs] = c.split(";");
      const eq = pair!.indexOf("=");
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      const expired = attrs.some((a) => /^\s*max-age=0\s*$/i.test(a) || /^\s*expires=Thu, 01 Jan 1970/i.test(a));
      if (!this.jars.has(u.host)) this.jars.set(u.host, new Map());
      if (expired || value === "") this.jars.get(u.host)!.delete(name);
      else this.jars.get(u.host)!.set(name, value);
    }
    return res;
  }

  /** Follows redirects from `url` until a non-redirect answer or `stopAt` matches the location. */
  async follow(url: string, stopAt?: (location: URL) => boolean): Promise<{ response: Response; url: string }> {
    let current = url;
    for (let i = 0; i < 20; i++) {
      const res = await this.fetch(current);
      const location = res.headers.get("location");
      if (res.status < 300 || res.status >= 400 || location === null) return { response: res, url: current };
      const next = new URL(location, current);
      if (stopAt?.(next)) return { response: res, url: next.href };
      current = next.href;
    }
    throw new Error("too many redirects");
  }

  /**
   * Signs in at the provider's dev login form as `login`, consenting, starting from cubby's
   * `/auth/login`. Returns the final response of cubby's callback (not followed further).
   * @param interceptCallback lets a test alter the callback URL before it reaches cubby
   */
  async signIn(cubbyUrl: string, login: string, next = "/", interceptCallback?: (callback: URL) => URL): Promise<Response> {
    let { response, url } = await this.follow(`${cubbyUrl}/auth/login?next=${encodeURIComponent(next)}`);
    for (let step = 0; step < 5; step++) {
      const html = await response.text();
      const form = /<form[^>]*action="([^"]+)"[^>]*method="post"/i.exec(html) ?? /<form[^>]*method="post"[^>]*action="([^"]+)"/i.exec(html);
      if (!form) throw new Error(`no form at ${url}: ${html.slice(0, 300)}`);
      const action = new URL(form[1]!, url).href;
      const fields = new URLSearchParams();
      if (/name="login"/.test(html)) {
        fields.set("login", login);
        fields.set("password", "any");
      }
      for (const m of html.matchAll(/<input[^>]*type="hidden"[^>]*name="([^"]+)"[^>]*value="([^"]*)"/g)) fields.set(m[1]!, m[2]!);
      let res = await this.fetch(action, { method: "POST", body: fields, headers: { "content-type": "application/x-www-form-urlencoded" } });
      let location = new URL(res.headers.get("location")!, action);
      while (!location.pathname.startsWith("/interaction/") && !location.href.startsWith(cubbyUrl)) {
        res = await this.fetch(location.href);
        location = new URL(res.headers.get("location")!, location);
      }
      if (location.href.startsWith(cubbyUrl)) {
        const callback = interceptCallback ? interceptCallback(location) : location;
        return this.fetch(callback.href);
      }
      url = location.href;
      response = await this.fetch(url);
    }
    throw new Error("sign-in did not reach cubby's callback");
  }
}
