/** The public plan list (spec: Billing, `GET /public/plans`). */
import { Effect, Schema } from "effect"
import { operation, Output, route } from "../catalogue/Operation.ts"
import { PlanSchema, PLAN_IDS, PLANS } from "./plans.ts"

export const listPlans = operation({
  name: "plans.list",
  summary: "The public plan list with prices in USD and INR and each plan's limits.",
  routes: [route.get("/public/plans")],
  access: { kind: "public" },
  output: Output.json(Schema.Struct({ plans: Schema.Array(PlanSchema) })),
  mutates: false,
  mcp: { tool: "list_plans" },
  cli: { command: "plans list", aliases: ["plans"] },
  run: () => Effect.succeed({ plans: PLAN_IDS.map((id) => PLANS[id]) })
})

export const planOperations = [listPlans]
