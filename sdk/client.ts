/**
 * `weft-orchestrator/client`: a typed client of weft's HTTP API (the one the `weft` CLI uses),
 * for the local runtime or a deployed API (signed with SigV4 by `createSigner`).
 *
 *   const weft = new WeftClient({ baseUrl: "http://127.0.0.1:3000" });
 *   const { executionId } = await weft.startExecution({ workflow: "hello", input: { name: "Ada" } });
 */
export * from "../cli/client.js";
export { createSigner, type RequestSigner, type SignerOptions } from "../cli/signing.js";
