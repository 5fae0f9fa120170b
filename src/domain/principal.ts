/** Who is calling: a signed-in user (by API key or session), or nobody. */
export interface Principal {
  userId: string;
  /** How the caller proved who they are. */
  via: "api_key" | "session";
}
