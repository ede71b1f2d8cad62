import TrialControl

/// The dashboard's charts as inline SVG: drawn to a fixed view box and scaled by the page to its
/// width, coloured by presentation attributes (the pages' policy allows no inline style), each
/// bar carrying its figure (`data-count`) and a `<title>` that a pointer or a screen reader shows.
enum Charts {
  static let width = 640.0
  static let height = 260.0
  static let left = 56.0
  static let bottom = 40.0
  static let top = 16.0

  /// A coordinate, to a tenth.
  static func n(_ value: Double) -> String { decimal(value, digits: 1) }

  /// The scale on the left: five steps of round numbers up to `scale` (at least 5, so that the
  /// steps are whole), and the axis.
  private static func grid(scale: Double, plotHeight: Double) -> String {
    var out = ""
    for step in 0...5 {
      let y = top + plotHeight - plotHeight * Double(step) / 5
      out +=
        "<line x1=\"\(n(left))\" y1=\"\(n(y))\" x2=\"\(n(width - 8))\" y2=\"\(n(y))\" stroke=\"#dddddd\"/>"
      out += "<text x=\"\(n(left - 6))\" y=\"\(n(y + 4))\" text-anchor=\"end\">"
      out += "\(MarkupText.count(scale * Double(step) / 5))</text>\n"
    }
    return out
  }

  private static func open(id: String, label: String) -> String {
    "<svg id=\"\(id)\" class=\"chart\" role=\"img\" aria-label=\"\(MarkupText.escaped(label))\" "
      + "xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(Int(width)) \(Int(height))\" "
      + "font-family=\"sans-serif\" font-size=\"11\">\n"
  }

  /// One bar per bucket, its label under it.
  static func histogram(id: String, bars: [(label: String, count: Int64)], caption: String) -> String {
    let plotHeight = height - top - bottom
    let scale = MarkupText.niceCeiling(Double(max(5, bars.map(\.count).max() ?? 5)))
    let slot = (width - left - 8) / Double(max(1, bars.count))
    var out = open(id: id, label: caption) + grid(scale: scale, plotHeight: plotHeight)
    for (index, bar) in bars.enumerated() {
      let barHeight = plotHeight * Double(bar.count) / scale
      let x = left + slot * Double(index)
      out += "<g class=\"bucket\" data-label=\"\(MarkupText.escaped(bar.label))\">"
      out +=
        "<rect x=\"\(n(x + slot * 0.15))\" y=\"\(n(top + plotHeight - barHeight))\" width=\"\(n(slot * 0.7))\" "
      out += "height=\"\(n(barHeight))\" fill=\"#1565c0\" data-count=\"\(bar.count)\">"
      out += "<title>\(MarkupText.escaped(bar.label)): \(bar.count)</title></rect>"
      out += "<text x=\"\(n(x + slot / 2))\" y=\"\(n(height - bottom + 16))\" text-anchor=\"middle\">"
      out += "\(MarkupText.escaped(bar.label))</text></g>\n"
    }
    out += "<text x=\"\(n(left))\" y=\"\(n(height - 6))\">\(MarkupText.escaped(caption))</text>\n</svg>\n"
    return out
  }

  /// The parts of a cohort's bar, from the bottom up: what became of its trials.
  static let cohortParts: [(name: String, color: String, value: @Sendable (CohortObject) -> Int64)] = [
    ("converted", "#2e7d32", { $0.converted }), ("pending", "#1565c0", { $0.active + $0.paused }),
    ("abandoned", "#9e9e9e", { $0.cancelled + $0.expired }),
  ]

  /// One stacked bar per period: converted, pending (active or paused) and abandoned (cancelled
  /// or expired), which together are the trials started in it.
  static func cohorts(_ stats: GetStatsReply) -> String {
    let plotHeight = height - top - bottom
    let periods = stats.periods
    let scale = MarkupText.niceCeiling(Double(max(5, periods.map(\.started).max() ?? 5)))
    let slot = (width - left - 8) / Double(max(1, periods.count))
    var out = open(
      id: "cohort-chart", label: "trials started in each \(stats.by.rawValue), by what became of them")
    out += grid(scale: scale, plotHeight: plotHeight)
    let every = max(1, (periods.count + 7) / 8)
    for (index, period) in periods.enumerated() {
      let x = left + slot * Double(index)
      var y = top + plotHeight
      out += "<g class=\"period\" data-start=\"\(period.start)\">"
      for part in cohortParts {
        let value = part.value(period)
        let barHeight = plotHeight * Double(value) / scale
        y -= barHeight
        out +=
          "<rect class=\"\(part.name)\" data-count=\"\(value)\" x=\"\(n(x + slot * 0.1))\" y=\"\(n(y))\" "
        out += "width=\"\(n(slot * 0.8))\" height=\"\(n(barHeight))\" fill=\"\(part.color)\">"
        out += "<title>\(period.start): \(value) \(part.name)</title></rect>"
      }
      if index % every == 0 {
        out += "<text x=\"\(n(x + slot / 2))\" y=\"\(n(height - bottom + 16))\" text-anchor=\"middle\">"
        out += "\(period.start)</text>"
      }
      out += "</g>\n"
    }
    var legendX = left
    for part in cohortParts {
      out +=
        "<rect x=\"\(n(legendX))\" y=\"\(n(height - 14))\" width=\"10\" height=\"10\" fill=\"\(part.color)\"/>"
      out += "<text x=\"\(n(legendX + 14))\" y=\"\(n(height - 5))\">\(part.name)</text>"
      legendX += 90
    }
    return out + "\n</svg>\n"
  }
}
