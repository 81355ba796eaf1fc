/**
 * Small charts drawn as inline SVG (no library): a line over a series and horizontal bars of
 * named counts. Each chart is an image whose text alternative states its figures, so a
 * screen reader gets the numbers the picture shows.
 */

const at = (t: string | undefined) => t ? new Date(t).toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" }) : ""

/**
 * A line over `values` (numbers; nulls leave gaps), scaled to its own maximum, with its axes
 * labelled (the highest value and 0 on the left; the first and last period below, from
 * `times`) and a dot at each period whose tooltip (`<title>`) says its time and value.
 */
export const Sparkline = ({ label, values, times = [], width = 280, height = 84 }: {
  readonly label: string
  readonly values: ReadonlyArray<number | null>
  readonly times?: ReadonlyArray<string>
  readonly width?: number
  readonly height?: number
}) => {
  const numbers = values.filter((v): v is number => typeof v === "number")
  const max = Math.max(1, ...numbers)
  const summary = `${label}: latest ${numbers.at(-1) ?? 0}, highest ${Math.max(0, ...numbers)} over ${values.length} periods`
  // The plot's box: room on the left for the values, below for the times.
  const left = 30, top = 8, bottom = height - 18, right = width - 6
  const step = values.length > 1 ? (right - left) / (values.length - 1) : 0
  const x = (i: number) => (left + i * step).toFixed(1)
  const y = (v: number) => (bottom - (v / max) * (bottom - top)).toFixed(1)
  let d = ""
  values.forEach((v, i) => {
    if (typeof v !== "number") {
      d += " "
      return
    }
    d += `${d === "" || d.endsWith(" ") ? "M" : "L"}${x(i)},${y(v)}`
  })
  return (
    <svg viewBox={`0 0 ${width} ${height}`} width={width} height={height} role="img" class="chart" aria-label={summary}>
      <title>{summary}</title>
      <line x1={left} y1={bottom} x2={right} y2={bottom} class="axis" />
      <line x1={left} y1={top} x2={left} y2={bottom} class="axis" />
      <text x={left - 4} y={top + 8} class="tick" text-anchor="end">{String(max)}</text>
      <text x={left - 4} y={bottom} class="tick" text-anchor="end">0</text>
      <text x={left} y={height - 4} class="tick" text-anchor="start">{at(times[0])}</text>
      <text x={right} y={height - 4} class="tick" text-anchor="end">{at(times.at(-1))}</text>
      {d.trim() ? <path d={d.trim()} class="line" /> : null}
      {values.map((v, i) => typeof v === "number"
        ? (
          <circle key={i} cx={x(i)} cy={y(v)} r={3} class="dot">
            <title>{`${at(times[i]) || `period ${i + 1}`}: ${v}`}</title>
          </circle>
        )
        : null)}
    </svg>
  )
}

/** One bar a row for each [name, count], scaled to the largest count. */
export const Bars = ({ label, entries, width = 320, row = 22 }: {
  readonly label: string
  readonly entries: ReadonlyArray<readonly [string, number]>
  readonly width?: number
  readonly row?: number
}) => {
  const height = Math.max(row, entries.length * row)
  const summary = `${label}: ${entries.map(([n, c]) => `${n} ${c}`).join(", ") || "none"}`
  const max = Math.max(1, ...entries.map(([, c]) => c))
  const labelWidth = width * 0.55
  return (
    <svg viewBox={`0 0 ${width} ${height}`} width={width} height={height} role="img" class="chart" aria-label={summary}>
      <title>{summary}</title>
      {entries.map(([name, count], i) => (
        <g key={name}>
          <text x={0} y={i * row + row * 0.7} class="bar-label">{`${name} (${count})`}</text>
          <rect x={labelWidth} y={i * row + 4} height={row - 8} width={Math.max(1, ((width - labelWidth) * count) / max)} class="bar" />
        </g>
      ))}
    </svg>
  )
}
