/**
 * The few entry points of untyped mail libraries the mail module uses (neither package ships
 * types). Signatures follow their sources: libmime 5.4.6 lib/libmime.js, html-to-text 10.0.1.
 */
declare module "libmime" {
  // CommonJS: `module.exports = new Libmime()`, so the instance is the default import
  const libmime: {
    decodeWords(str: string): string
    parseHeaderValue(str: string): { value: string; params: Record<string, string> }
    /** media type for a file name's extension; application/octet-stream when unknown */
    detectMimeType(filename: string): string
  }
  export default libmime
}

declare module "html-to-text" {
  export interface HtmlToTextOptions {
    readonly wordwrap?: number | false | null
    readonly limits?: { readonly maxInputLength?: number; readonly maxDepth?: number; readonly maxChildNodes?: number }
    readonly selectors?: ReadonlyArray<{ readonly selector: string; readonly format?: string; readonly options?: Record<string, unknown> }>
  }
  export function convert(html: string, options?: HtmlToTextOptions): string
  export function compile(options?: HtmlToTextOptions): (html: string) => string
}
