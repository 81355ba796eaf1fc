/**
 * The walls of the house (docs/architecture.md), checked in CI: `pnpm walls`.
 *
 * Layers of core, from the bottom: foundation (errors, shared, settings, platform), ports
 * and infrastructure (db, transport, dns, egress, jobs, ratelimit, the blob store and its download headers), the mail
 * engine (mail), access and the catalogue's builder (access, catalogue), the domains, the
 * engine (engine/), and core's entry points. Each layer imports only layers below it (and
 * itself). Above core: the adapters (mailserver, mcp, http, cli), which import only core's
 * public entry points. No import cycle anywhere, type-only imports included.
 *
 * TypeScript 7's package has no compiler API, so dependency-cruiser reads our sources with
 * its swc parser; `tsPreCompilationDeps` keeps type-only imports in the graph.
 */
const CORE = "^packages/core/src/"
const FOUNDATION = `${CORE}(errors|shared|settings|platform)/`
const PORTS = `${CORE}(db|transport|dns|egress|jobs|ratelimit)/|${CORE}blobs/(BlobStore|stores|s3|download)\\.ts$`
const MAIL = `${CORE}mail/`
const ACCESS = `${CORE}(access|catalogue)/`
const ENGINE = `${CORE}engine/`
const ENTRIES = `${CORE}(index|ports|internal)\\.ts$`
const ADAPTERS = "^packages/(mailserver|mcp|http|cli|dashboard)/"

const below = (from, allowed) => ({ path: from, pathNot: allowed })

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "No import cycle in packages/, type-only imports counted.",
      severity: "error",
      from: { path: "^packages/" },
      to: { circular: true }
    },
    {
      name: "core-imports-no-adapter",
      comment: "Core never imports an adapter (http, mcp, cli, mailserver, dashboard) or the testkit.",
      severity: "error",
      from: { path: "^packages/core/src/" },
      to: { path: "^packages/(http|mcp|cli|mailserver|dashboard|testkit)/" }
    },
    {
      name: "adapters-use-the-public-api",
      comment: "Adapters import only @inbox/core (index.ts) and @inbox/core/ports (ports.ts).",
      severity: "error",
      from: { path: `${ADAPTERS}src/` },
      to: { path: CORE, pathNot: "^packages/core/src/(index|ports)\\.ts$" }
    },
    {
      name: "foundation-imports-nothing-above",
      comment: "errors, shared, settings and platform import nothing else of core.",
      severity: "error",
      from: { path: FOUNDATION },
      to: below(CORE, FOUNDATION)
    },
    {
      name: "ports-import-no-domain",
      comment: "Ports and infrastructure import only the foundation and each other: never a domain.",
      severity: "error",
      from: { path: PORTS },
      to: below(CORE, `${FOUNDATION}|${PORTS}`)
    },
    {
      name: "mail-engine-is-pure",
      comment: "The mail engine touches no database, transport or tenant: it asks only the Egress and Ids ports.",
      severity: "error",
      from: { path: MAIL },
      to: below(CORE, `${FOUNDATION}|${MAIL}|${CORE}egress/`)
    },
    {
      name: "catalogue-below-the-domains",
      comment: "access and the catalogue's builder import only the layers below them: the domains declare operations with them.",
      severity: "error",
      from: { path: ACCESS },
      to: below(CORE, `${FOUNDATION}|${PORTS}|${MAIL}|${ACCESS}`)
    },
    {
      name: "domains-below-the-engine",
      comment: "No domain imports the engine (which gathers and runs the domains' operations) or an entry point.",
      severity: "error",
      from: { path: CORE, pathNot: `${ENGINE}|${ENTRIES}` },
      to: { path: `${ENGINE}|${ENTRIES}` }
    },
    {
      name: "engine-below-the-entries",
      comment: "The engine imports no entry point of core.",
      severity: "error",
      from: { path: ENGINE },
      to: { path: ENTRIES }
    }
  ],
  options: {
    parser: "swc",
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    doNotFollow: { path: "node_modules" },
    exclude: { path: "node_modules|/dist/|/test/|\\.test\\.ts$" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      mainFields: ["module", "main", "types"]
    }
  }
}
