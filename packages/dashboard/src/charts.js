// Small charts drawn as inline SVG (no library): a sparkline of a series and horizontal bars
// of named counts. Each chart is an image with a text alternative that states its figures,
// so a screen reader gets the numbers the picture shows.
const NS = "http://www.w3.org/2000/svg"
const svg = (tag, attrs = {}) => {
  const el = document.createElementNS(NS, tag)
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v))
  return el
}

/** A line over `values` (numbers, nulls leave gaps), scaled to its own maximum. */
export const sparkline = (label, values, { width = 240, height = 48 } = {}) => {
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img", class: "chart" })
  const numbers = values.filter((v) => typeof v === "number")
  const max = Math.max(1, ...numbers)
  const last = numbers.at(-1) ?? 0
  const title = svg("title")
  title.textContent = `${label}: latest ${last}, highest ${Math.max(0, ...numbers)} over ${values.length} periods`
  chart.setAttribute("aria-label", title.textContent)
  chart.append(title, svg("line", { x1: 0, y1: height - 1, x2: width, y2: height - 1, class: "axis" }))
  const step = values.length > 1 ? width / (values.length - 1) : width
  let d = ""
  values.forEach((v, i) => {
    if (typeof v !== "number") { d += " "; return }
    const x = (i * step).toFixed(1), y = (height - 2 - (v / max) * (height - 6)).toFixed(1)
    d += `${d === "" || d.endsWith(" ") ? "M" : "L"}${x},${y}`
  })
  if (d.trim()) chart.append(svg("path", { d: d.trim(), class: "line" }))
  return chart
}

/** One bar a row for each [name, count], scaled to the largest count. */
export const bars = (label, entries, { width = 320, row = 22 } = {}) => {
  const height = Math.max(row, entries.length * row)
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img", class: "chart" })
  const title = svg("title")
  title.textContent = `${label}: ${entries.map(([n, c]) => `${n} ${c}`).join(", ") || "none"}`
  chart.setAttribute("aria-label", title.textContent)
  chart.append(title)
  const max = Math.max(1, ...entries.map(([, c]) => c))
  const labelWidth = width * 0.55
  entries.forEach(([name, count], i) => {
    const y = i * row
    const text = svg("text", { x: 0, y: y + row * 0.7, class: "bar-label" })
    text.textContent = `${name} (${count})`
    chart.append(text, svg("rect", { x: labelWidth, y: y + 4, height: row - 8, width: Math.max(1, ((width - labelWidth) * count) / max), class: "bar" }))
  })
  return chart
}
