/**
 * Who is uploading through tus (CONTRACT §8): a guest upload link's token as
 * `Authorization: Bearer <token>`, else whatever `/v1/*` accepts (an API key, or the dashboard's
 * session cookie from the same origin).
 */
import { isApiKeyShaped } from "../domain/api-key.ts";
import { bearerToken, type Authenticator } from "../auth/principal.ts";
import type { RequestContext } from "../context/request-context.ts";
import type { UploadLinkService } from "../service/upload-links.ts";
import type { Uploader } from "../service/uploads.ts";
import { authRequest } from "./request-context.ts";

/**
 * The uploader of a request. A bearer token that is not a known link's goes to the
 * Authenticator, which counts it as a failed authentication.
 * @throws AppError unauthenticated, permission_denied, resource_exhausted (as `/v1/*`)
 */
export async function uploaderOf(request: Request, context: RequestContext, auth: Authenticator, links: UploadLinkService): Promise<Uploader> {
  const bearer = bearerToken(request.headers.get("authorization"));
  if (bearer !== undefined && !isApiKeyShaped(bearer)) {
    const link = await links.byToken(bearer);
    if (link !== undefined) return { link };
  }
  return { principal: await auth.require(authRequest(request, context)) };
}
