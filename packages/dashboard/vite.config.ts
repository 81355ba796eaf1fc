/**
 * Vite's build of the dashboard: index.html and its entry bundled into dist/, every file at
 * the top level (the server's /dashboard/:file route takes one path segment), named by a hash
 * of its content so the server can let browsers keep them. JSX is Preact's.
 */
import { defineConfig } from "vite"

export default defineConfig({
  root: import.meta.dirname,
  base: "/dashboard/",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    assetsDir: "",
    target: "es2022",
    // The page is modern-browser only; no polyfill for <link rel=modulepreload>.
    modulePreload: { polyfill: false },
    reportCompressedSize: false
  }
})
