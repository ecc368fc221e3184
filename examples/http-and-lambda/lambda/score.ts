/**
 * The `score-lead` Lambda function. Locally, weft.config.json maps the function name to this module;
 * deployed, the same handler is the function's code. A `lambda` node's function receives
 * `{ input, params, deps, context }`: here `deps["fetch-lead"]` is the http node's `{status, headers, body}`.
 */

interface Lead {
  id: string;
  company: string;
  employees: number;
  country: string;
  visits: number;
}

interface ScoreEvent {
  input: { leadId?: string; campaign?: string };
  deps: { "fetch-lead"?: { status: number; body: Lead } };
  context: { executionId: string; nodeId: string; attempt: number };
}

export interface Score {
  leadId: string;
  company: string;
  score: number;
  tier: "hot" | "warm" | "cold";
  campaign: string | null;
}

export async function handler(event: ScoreEvent): Promise<Score> {
  const lead = event.deps["fetch-lead"]?.body;
  if (!lead) {
    // Marked terminal: retrying cannot make the missing dependency appear.
    throw Object.assign(new Error("no lead in deps.fetch-lead"), { name: "MissingLead", terminal: true });
  }
  const size = Math.min(40, Math.round(Math.log10(Math.max(1, lead.employees)) * 12));
  const engagement = Math.min(40, lead.visits * 4);
  const market = ["DE", "NL", "FR", "GB", "US"].includes(lead.country) ? 20 : 10;
  const score = size + engagement + market;
  return {
    leadId: lead.id,
    company: lead.company,
    score,
    tier: score >= 70 ? "hot" : score >= 40 ? "warm" : "cold",
    campaign: event.input.campaign ?? null,
  };
}
