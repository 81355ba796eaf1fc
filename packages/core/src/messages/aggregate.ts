/**
 * A thread's summary fields from its messages, as pure functions: `summarise` computes
 * them from every message (after a merge, a label change or a delete), `extend` adds one
 * new message to a stored summary (the common case on arrival, without reading the thread).
 * A message's timestamp is the service's clock when it was stored, so messages arrive in
 * timestamp order (give or take clock skew between processes, which `extend` tolerates);
 * in that order both give the same answer for the same messages, and a test checks it.
 *
 * Rules: `subject` is the oldest message's; `preview`, `last_message_id` and `timestamp`
 * (last_at) the newest's; `senders` and `recipients` list each address once in order of
 * first appearance; `labels` is the union of the messages' labels, in order of first
 * appearance; `received_timestamp` / `sent_timestamp` are the newest received / sent
 * message's times; a thread is hidden when every message carries a hidden label.
 */
import { HIDDEN_LABELS } from "./model.ts"

export interface MessageFacts {
  readonly id: string
  readonly direction: "received" | "sent"
  readonly timestamp: Date
  readonly sender: string
  readonly recipients: ReadonlyArray<string>
  readonly labels: ReadonlyArray<string>
  readonly subject: string
  readonly preview: string
  readonly size: number
}

export interface ThreadFacts {
  readonly subject: string
  readonly preview: string
  readonly senders: ReadonlyArray<string>
  readonly recipients: ReadonlyArray<string>
  readonly labels: ReadonlyArray<string>
  readonly last_message_id: string
  readonly message_count: number
  readonly size: number
  readonly received_at: Date | null
  readonly sent_at: Date | null
  readonly last_at: Date
  readonly hidden: boolean
}

const union = (a: ReadonlyArray<string>, b: ReadonlyArray<string>): ReadonlyArray<string> => [...new Set([...a, ...b])]

export const isHidden = (labels: ReadonlyArray<string>): boolean => labels.some((l) => (HIDDEN_LABELS as ReadonlyArray<string>).includes(l))

const later = (a: Date | null, b: Date): Date => (a === null || b.getTime() > a.getTime() ? b : a)

/** Newest first by (timestamp, id), as lists order them. */
const isNewer = (m: MessageFacts, than: { readonly last_at: Date; readonly last_message_id: string }): boolean =>
  m.timestamp.getTime() > than.last_at.getTime() ||
  (m.timestamp.getTime() === than.last_at.getTime() && m.id > than.last_message_id)

/** A thread of one message. */
export const start = (m: MessageFacts): ThreadFacts => ({
  subject: m.subject,
  preview: m.preview,
  senders: [m.sender],
  recipients: union([], m.recipients),
  labels: union([], m.labels),
  last_message_id: m.id,
  message_count: 1,
  size: m.size,
  received_at: m.direction === "received" ? m.timestamp : null,
  sent_at: m.direction === "sent" ? m.timestamp : null,
  last_at: m.timestamp,
  hidden: isHidden(m.labels)
})

/** The summary after one more message. */
export const extend = (t: ThreadFacts, m: MessageFacts): ThreadFacts => {
  const newest = isNewer(m, t)
  return {
    subject: t.subject,
    preview: newest ? m.preview : t.preview,
    senders: union(t.senders, [m.sender]),
    recipients: union(t.recipients, m.recipients),
    labels: union(t.labels, m.labels),
    last_message_id: newest ? m.id : t.last_message_id,
    message_count: t.message_count + 1,
    size: t.size + m.size,
    received_at: m.direction === "received" ? later(t.received_at, m.timestamp) : t.received_at,
    sent_at: m.direction === "sent" ? later(t.sent_at, m.timestamp) : t.sent_at,
    last_at: newest ? m.timestamp : t.last_at,
    hidden: t.hidden && isHidden(m.labels)
  }
}

/** The summary of messages given oldest first; undefined for none. */
export const summarise = (oldestFirst: ReadonlyArray<MessageFacts>): ThreadFacts | undefined => {
  const [first, ...rest] = oldestFirst
  if (first === undefined) return undefined
  // The oldest message's subject names the thread, whatever order the rest arrived in.
  return rest.reduce(extend, start(first))
}
