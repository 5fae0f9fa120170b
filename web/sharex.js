// A ShareX custom uploader (CONTRACT §15): the `.sxcu` file the dashboard offers for a new API
// key. ShareX (a screenshot and upload tool for Windows) adds it as a custom uploader when the
// file is opened, and then uploads screenshots, texts and files to cubby with it. The fields are
// those of ShareX's CustomUploaderItem (ShareX.UploadersLib/CustomUploader/CustomUploaderItem.cs).

/**
 * The custom uploader format's version: ShareX migrates files of 13.7.1 and older from the
 * `$json:…$` syntax; from 14.0 on, `{json:…}` and `{filename}` are read as written here.
 */
export const SHAREX_VERSION = "15.0.0";

/**
 * The custom uploader for `key` on the cubby at `origin`: a raw-body `POST /v1/files` (Body
 * "Binary": ShareX sends the file as it is, its Content-Type from the file's name), named by the
 * `name` query parameter, which ShareX fills with `{filename}` and URL-encodes; the answer is the
 * File, whose `url` ShareX copies. An error's `message` (google.rpc.Status) is what ShareX shows.
 * There is no DeletionURL: ShareX opens that URL in a browser (a GET), and cubby deletes only by
 * `DELETE /v1/files/{id}` with the key.
 * @param {{ origin: string, key: string, visibility: "private" | "internal" | "public" }} uploader
 *   `origin` as `location.origin`; `visibility` is given to every upload made with it
 * @returns {Record<string, unknown>} the `.sxcu` file's JSON object
 */
export function sharexUploader({ origin, key, visibility }) {
  return {
    Version: SHAREX_VERSION,
    Name: `cubby (${new URL(origin).host})`,
    DestinationType: "ImageUploader, TextUploader, FileUploader",
    RequestMethod: "POST",
    RequestURL: `${origin}/v1/files`,
    Parameters: { name: "{filename}", visibility },
    Headers: { Authorization: `Bearer ${key}` },
    Body: "Binary",
    URL: "{json:url}",
    ErrorMessage: "{json:message}",
  };
}
