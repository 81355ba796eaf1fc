// Small charts drawn as inline SVG (no library): a sparkline of a series and horizontal bars
// of named counts. Each chart is an image with a text alternative that states its figures,
// so a screen reader gets the numbers the picture shows.
const NS = "http://www.w3.org/2000/svg"
const svg = (tag, attrs = {}) => {
  const el = document.createElementNS(NS, tag)
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v))
  return el
}

/**
 * A line over `values` (numbers, nulls leave gaps), scaled to its own maximum, with its axes
 * labelled (the highest value and 0 on the left; the first and last period below, from
 * `times`) and a dot at each period whose tooltip (`<title>`) says its time and value.
 */
export const sparkline = (label, values, { times = [], width = 280, height = 84 } = {}) => {
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img", class: "chart" })
  const numbers = values.filter((v) => typeof v === "number")
  const max = Math.max(1, ...numbers)
  const last = numbers.at(-1) ?? 0
  const title = svg("title")
  title.textContent = `${label}: latest ${last}, highest ${Math.max(0, ...numbers)} over ${values.length} periods`
  chart.setAttribute("aria-label", title.textContent)
  // The plot's box: room on the left for the values, below for the times.
  const left = 30, top = 8, bottom = height - 18, right = width - 6
  const text = (x, y, content, anchor = "start") => { const t = svg("text", { x, y, class: "tick", "text-anchor": anchor }); t.textContent = content; return t }
  const when = (t) => t ? new Date(t).toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" }) : ""
  chart.append(title,
    svg("line", { x1: left, y1: bottom, x2: right, y2: bottom, class: "axis" }), svg("line", { x1: left, y1: top, x2: left, y2: bottom, class: "axis" }),
    text(left - 4, top + 8, String(max), "end"), text(left - 4, bottom, "0", "end"),
    text(left, height - 4, when(times[0])), text(right, height - 4, when(times.at(-1)), "end"))
  const step = values.length > 1 ? (right - left) / (values.length - 1) : 0
  const x = (i) => (left + i * step).toFixed(1)
  const y = (v) => (bottom - (v / max) * (bottom - top)).toFixed(1)
  let d = ""
  values.forEach((v, i) => {
    if (typeof v !== "number") { d += " "; return }
    d += `${d === "" || d.endsWith(" ") ? "M" : "L"}${x(i)},${y(v)}`
  })
  if (d.trim()) chart.append(svg("path", { d: d.trim(), class: "line" }))
  values.forEach((v, i) => {
    if (typeof v !== "number") return
    const dot = svg("circle", { cx: x(i), cy: y(v), r: 3, class: "dot" })
    const tip = svg("title")
    tip.textContent = `${when(times[i]) || `period ${i + 1}`}: ${v}`
    dot.append(tip)
    chart.append(dot)
  })
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
