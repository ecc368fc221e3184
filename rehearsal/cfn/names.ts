/** Physical names as CloudFormation makes them for resources the template leaves unnamed. */
import { randomBytes } from "node:crypto";

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

function suffix(length = 12): string {
  return [...randomBytes(length)].map((byte) => ALPHABET[byte % ALPHABET.length]).join("");
}

/** `<stack>-<logicalId>-<RANDOM>`, cut to `maxLength`; lower case where the service demands it (S3). */
export function physicalName(
  stackName: string,
  logicalId: string,
  maxLength: number,
  lowerCase = false,
): string {
  const tail = `-${suffix()}`;
  const name = `${stackName}-${logicalId}`.slice(0, maxLength - tail.length) + tail;
  return lowerCase ? name.toLowerCase() : name;
}

/** A short lower-case id, like an API Gateway API id. */
export function shortId(length = 10): string {
  return suffix(length).toLowerCase();
}
