/** The agent onboarding operations of the catalogue (spec: Agent onboarding). */
import { operation, Output, route } from "../catalogue/Operation.ts"
import { Agents, AttachHumanInput, AttachHumanResult, SignUpInput, SignUpResult, VerifyInput, VerifyResult } from "./Agents.ts"

export const signUp = operation({
  name: "agent.signUp",
  summary: "Create an organization, an inbox and an API key for an agent; a human receives a verification code.",
  routes: [route.post("/v0/agent/sign-up")],
  access: { kind: "public" },
  body: SignUpInput,
  // A sign-up body is two short fields: a small cap bounds what an anonymous client can make us parse.
  bodyLimit: 8 * 1024,
  output: Output.json(SignUpResult),
  mutates: true,
  mcp: { exclude: "MCP calls always carry a key; sign-up is for clients that have none" },
  cli: { exclude: "the operator creates organizations with `inboxctl org create`" },
  run: ({ input, context }) => Agents.use((a) => a.signUp(input, context.clientIp))
})

export const attachHuman = operation({
  name: "agent.attachHuman",
  summary: "Attach (or replace) the human owner of an agent account and email them a 6-digit code.",
  routes: [route.post("/v0/agent/attach-human")],
  access: { kind: "member", permission: "account_update" },
  body: AttachHumanInput,
  output: Output.json(AttachHumanResult),
  mutates: true,
  mcp: { tool: "attach_human" },
  cli: { command: "agent attach-human" },
  run: ({ principal, input }) => Agents.use((a) => a.attachHuman(principal, input))
})

export const verifyHuman = operation({
  name: "agent.verify",
  summary: "Submit the human's 6-digit code to verify the agent account and unlock sending.",
  routes: [route.post("/v0/agent/verify")],
  access: { kind: "member", permission: "account_update" },
  body: VerifyInput,
  output: Output.json(VerifyResult),
  mutates: true,
  mcp: { tool: "verify_human" },
  cli: { command: "agent verify" },
  run: ({ principal, input }) => Agents.use((a) => a.verify(principal, input))
})

export const agentOperations = [signUp, attachHuman, verifyHuman]
