/**
 * A minimal ustar archive, written and read a piece at a time, for backup files: regular
 * files only, names under 100 bytes, entries under 8 GiB. A backup is a tar so an operator
 * can look into it with `tar tf` and take it apart with standard tools; Node has no tar of
 * its own, and these few functions spare the project a dependency. Reads and writes are
 * synchronous file calls: the commands that use them own the process and do one thing.
 */
import { closeSync, openSync, readSync, writeSync } from "node:fs"

const BLOCK = 512

const field = (header: Buffer, offset: number, length: number, value: string) => {
  header.write(value, offset, Math.min(length, Buffer.byteLength(value)), "utf8")
}

const octal = (value: number, length: number) => value.toString(8).padStart(length - 1, "0")

const headerFor = (name: string, size: number, mtime: Date): Buffer => {
  if (Buffer.byteLength(name) >= 100) throw new Error(`tar: name too long: ${name}`)
  const header = Buffer.alloc(BLOCK)
  field(header, 0, 100, name)
  field(header, 100, 8, octal(0o644, 8))
  field(header, 108, 8, octal(0, 8))
  field(header, 116, 8, octal(0, 8))
  field(header, 124, 12, octal(size, 12))
  field(header, 136, 12, octal(Math.floor(mtime.getTime() / 1000), 12))
  field(header, 148, 8, "        ")
  field(header, 156, 1, "0")
  field(header, 257, 6, "ustar")
  field(header, 263, 2, "00")
  let sum = 0
  for (const byte of header) sum += byte
  field(header, 148, 8, `${octal(sum, 7)}\0 `)
  return header
}

/** An archive being written to `path` (created or truncated). */
export const createTar = (path: string, mtime: Date) => {
  const fd = openSync(path, "w")
  return {
    /** One entry: its size first, then its bytes in as many chunks as the caller likes. */
    add: (name: string, size: number, chunks: Iterable<Uint8Array>) => {
      writeSync(fd, headerFor(name, size, mtime))
      let written = 0
      for (const chunk of chunks) {
        writeSync(fd, chunk)
        written += chunk.length
      }
      if (written !== size) throw new Error(`tar: ${name}: ${written} bytes written, ${size} announced`)
      const pad = (BLOCK - (size % BLOCK)) % BLOCK
      if (pad > 0) writeSync(fd, Buffer.alloc(pad))
    },
    close: () => {
      writeSync(fd, Buffer.alloc(BLOCK * 2))
      closeSync(fd)
    }
  }
}

export interface TarEntry {
  readonly name: string
  readonly size: number
  /** The entry's bytes, read from the archive in chunks of at most `chunkBytes`. */
  chunks(chunkBytes?: number): Iterable<Uint8Array>
}

const text = (header: Buffer, offset: number, length: number) => {
  const raw = header.subarray(offset, offset + length)
  const end = raw.indexOf(0)
  return raw.subarray(0, end === -1 ? length : end).toString("utf8")
}

/** The regular-file entries of the archive at `path`, in order; the callback runs for each. */
export const readTar = (path: string, onEntry: (entry: TarEntry) => void): void => {
  const fd = openSync(path, "r")
  try {
    const header = Buffer.alloc(BLOCK)
    let position = 0
    for (;;) {
      if (readSync(fd, header, 0, BLOCK, position) < BLOCK) throw new Error("tar: the archive ends inside a header")
      if (header.every((b) => b === 0)) return
      if (text(header, 257, 5) !== "ustar") throw new Error("tar: not a ustar archive")
      let sum = 0
      for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : header[i] ?? 0
      if (sum !== Number.parseInt(text(header, 148, 8).trim(), 8)) throw new Error("tar: a header's checksum is wrong")
      const prefix = text(header, 345, 155)
      const name = prefix === "" ? text(header, 0, 100) : `${prefix}/${text(header, 0, 100)}`
      const size = Number.parseInt(text(header, 124, 12).trim() || "0", 8)
      const start = position + BLOCK
      const type = text(header, 156, 1)
      if (type === "0" || type === "") {
        onEntry({
          name,
          size,
          chunks: function*(chunkBytes = 1024 * 1024) {
            for (let at = 0; at < size; at += chunkBytes) {
              const chunk = Buffer.alloc(Math.min(chunkBytes, size - at))
              if (readSync(fd, chunk, 0, chunk.length, start + at) < chunk.length) throw new Error(`tar: ${name} is cut short`)
              yield chunk
            }
          }
        })
      }
      position = start + Math.ceil(size / BLOCK) * BLOCK
    }
  } finally {
    closeSync(fd)
  }
}
