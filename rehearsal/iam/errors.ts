/** AccessDenied answers in each service's own wire format, as the SDKs parse them. */
import { randomUUID } from "node:crypto";
import type { WireProtocol } from "./requests/types.js";

export interface ErrorAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

function xmlEscape(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/** The answer AWS gives `service` for a request IAM refused. */
export function accessDenied(
  service: string,
  protocol: WireProtocol,
  message: string,
  method = "POST",
): ErrorAnswer {
  const requestId = randomUUID();
  switch (service) {
    case "dynamodb":
      return {
        status: 400,
        headers: { "content-type": "application/x-amz-json-1.0", "x-amzn-requestid": requestId },
        body: JSON.stringify({ __type: "com.amazon.coral.service#AccessDeniedException", Message: message }),
      };
    case "events":
      return {
        status: 400,
        headers: { "content-type": "application/x-amz-json-1.1", "x-amzn-requestid": requestId },
        body: JSON.stringify({ __type: "AccessDeniedException", Message: message }),
      };
    case "sqs":
      if (protocol === "json") {
        return {
          status: 403,
          headers: {
            "content-type": "application/x-amz-json-1.0",
            "x-amzn-requestid": requestId,
            "x-amzn-query-error": "AccessDenied;Sender",
          },
          body: JSON.stringify({ __type: "com.amazon.coral.service#AccessDeniedException", message }),
        };
      }
      return {
        status: 403,
        headers: { "content-type": "text/xml", "x-amzn-requestid": requestId },
        body:
          '<?xml version="1.0"?><ErrorResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/">' +
          `<Error><Type>Sender</Type><Code>AccessDenied</Code><Message>${xmlEscape(message)}</Message><Detail/></Error>` +
          `<RequestId>${requestId}</RequestId></ErrorResponse>`,
      };
    case "s3":
      return {
        status: 403,
        headers: { "content-type": "application/xml", "x-amz-request-id": requestId },
        // S3 answers a HEAD with the status alone.
        body:
          method.toUpperCase() === "HEAD"
            ? ""
            : '<?xml version="1.0" encoding="UTF-8"?>' +
              `<Error><Code>AccessDenied</Code><Message>${xmlEscape(message)}</Message><RequestId>${requestId}</RequestId></Error>`,
      };
    default:
      return {
        status: 403,
        headers: { "content-type": "application/json", "x-amzn-requestid": requestId },
        body: JSON.stringify({ __type: "AccessDeniedException", message }),
      };
  }
}
