/**
 * An execution's input on its way to the API: measured as its exact JSON text (as the API measures
 * it), sent in the request when small, uploaded first (`POST /payloads`, then a PUT to the URL it
 * answers) and sent as `inputRef` when larger, refused here when over the API's limit.
 */
import { encodeJson, PayloadError } from "../shared/domain/json.js";
import { PAYLOAD_LIMITS } from "../shared/domain/payload.js";
import type { InputValue } from "./args.js";
import { type InputSource, JsonText, type WeftClient } from "./client.js";
import { CliError } from "./errors.js";
import { formatSize } from "./render.js";

/**
 * Largest input (UTF-8 bytes of its JSON text) sent in the request itself. A request to a deployed
 * API is a Lambda invocation, which carries 6 MB, event around the body included; 5 MiB stays below
 * that with room for the rest of the body (workflow, version, key). Larger inputs are uploaded.
 */
export const DIRECT_INPUT_BYTES = 5 * 1024 * 1024;

/** An input ready to send: its exact JSON text and that text's size. */
export interface EncodedInput {
  text: string;
  bytes: number;
  source: string;
}

/** The exact JSON text of an input; a CliError when it is over the API's limits (size, nesting). */
export function encodeInput(input: InputValue): EncodedInput {
  const { maxBytes, maxDepth } = PAYLOAD_LIMITS;
  let text: string;
  try {
    // No size limit here, so the message can say how large the input is; checked just below.
    text = encodeJson(input.value, {
      maxBytes: Number.MAX_SAFE_INTEGER,
      maxDepth,
      what: `the input (${input.source})`,
    });
  } catch (error) {
    if (error instanceof PayloadError) throw new CliError(error.message, 1, error.code);
    throw error;
  }
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > maxBytes) {
    throw new CliError(
      `the input (${input.source}) is ${formatSize(bytes)} (${bytes} bytes) as JSON text; an execution input is at most ${formatSize(maxBytes)} (${maxBytes} bytes)`,
      1,
      "PayloadTooLarge",
    );
  }
  return { text, bytes, source: input.source };
}

/**
 * The input as a request carries it: inline up to DIRECT_INPUT_BYTES, else uploaded now and named
 * by its inputRef. `note` tells a person about the upload (it says nothing in --json mode).
 */
export async function sendInput(
  client: WeftClient,
  input: EncodedInput,
  note: (text: string) => void = () => {},
): Promise<InputSource> {
  if (input.bytes <= DIRECT_INPUT_BYTES) return { input: new JsonText(input.text) };
  note(
    `uploading the input (${formatSize(input.bytes)}, over the ${formatSize(DIRECT_INPUT_BYTES)} of a request)…`,
  );
  const ticket = await client.createUpload(input.bytes);
  await client.upload(ticket, input.text);
  return { inputRef: ticket.inputRef };
}
