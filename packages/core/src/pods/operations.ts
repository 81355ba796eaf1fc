/** The pod operations of the catalogue (spec: Pods). */
import { Effect } from "effect"
import { operation, Output, route } from "../catalogue/Operation.ts"
import { listBody } from "../shared/pagination.ts"
import { CreatePodInput, ListPodsQuery, Pod, Pods } from "./Pods.ts"

const COLUMNS = ["pod_id", "name", "client_id", "created_at"]

export const createPod = operation({
  name: "pods.create",
  summary: "Create a pod (an isolated group of inboxes).",
  routes: [route.post("/v0/pods")],
  access: { kind: "member", permission: "pod_create", scopes: ["organization"] },
  body: CreatePodInput,
  output: Output.json(Pod),
  mutates: true,
  mcp: { tool: "create_pod" },
  cli: { command: "pods create", aliases: ["pod create"], columns: COLUMNS },
  run: ({ principal, input }) => Pods.use((p) => p.create(principal, input))
})

export const listPods = operation({
  name: "pods.list",
  summary: "List pods, newest first.",
  routes: [route.get("/v0/pods")],
  access: { kind: "member", permission: "pod_read" },
  query: ListPodsQuery,
  output: Output.list("pods", Pod),
  mutates: false,
  mcp: { tool: "list_pods" },
  cli: { command: "pods list", aliases: ["pod list"], columns: COLUMNS },
  run: ({ principal, input }) => Pods.use((p) => Effect.map(p.list(principal, input), (page) => listBody("pods", page)))
})

export const getPod = operation({
  name: "pods.get",
  summary: "Get a pod.",
  routes: [route.get("/v0/pods/:pod_id")],
  access: { kind: "member", permission: "pod_read" },
  output: Output.json(Pod),
  mutates: false,
  mcp: { tool: "get_pod" },
  cli: { command: "pods get", aliases: ["pod get"], columns: COLUMNS },
  run: ({ principal, params }) => Pods.use((p) => p.get(principal, params.pod_id))
})

export const deletePod = operation({
  name: "pods.delete",
  summary: "Delete an empty pod. The default pod cannot be deleted.",
  routes: [route.delete("/v0/pods/:pod_id")],
  access: { kind: "member", permission: "pod_delete", scopes: ["organization"] },
  output: Output.empty,
  mutates: true,
  mcp: { tool: "delete_pod" },
  cli: { command: "pods delete", aliases: ["pod delete"] },
  run: ({ principal, params }) => Pods.use((p) => p.delete(principal, params.pod_id))
})

export const podOperations = [createPod, listPods, getPod, deletePod]
