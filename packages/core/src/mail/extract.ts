/**
 * Reply extraction: PLACEHOLDER written by the parse helper so parse.ts compiles; it returns
 * its input unchanged. The reply-extraction helper replaces this file with the real
 * implementation (same signature).
 */
export const extractReply = (input: { text?: string; html?: string }): { text?: string; html?: string } => ({ ...input })
