/**
 * Comparing a secret a client sent with the one the server holds (the inbound secret, the
 * metrics token, a session's CSRF token), in a time that says nothing about either: both
 * sides are hashed first, so the constant-time comparison always runs over 32 bytes and
 * neither the content nor the length of the expected secret shows in how long it takes.
 */
import { createHash, timingSafeEqual } from "node:crypto"

const digest = (value: string) => createHash("sha256").update(value).digest()

export const sameSecret = (given: string, expected: string): boolean => timingSafeEqual(digest(given), digest(expected))
