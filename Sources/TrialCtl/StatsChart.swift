import TrialControl
import TrialCore

/// The conversion figures as an SVG chart, as `systemd-analyze plot` writes its own: each
/// period's cohort a stacked bar of what became of its trials (converted, cancelled, expired,
/// paused, active), the conversion rate a line on a scale of its own, with axes, their labels and
/// a legend. Plain SVG 1.1, no script, no external reference.
struct StatsChart {
  let stats: GetStatsReply

  init(_ stats: GetStatsReply) {
    self.stats = stats
  }

  static let width = 960.0
  static let height = 520.0
  static let left = 80.0
  static let right = 80.0
  static let top = 80.0
  static let bottom = 70.0

  /// The parts of a bar, from the bottom up, with their colours.
  static let series: [(name: String, color: String, value: KeyPath<CohortObject, Int64> & Sendable)] = [
    ("converted", "#2e7d32", \.converted), ("cancelled", "#8d8d8d", \.cancelled),
    ("expired", "#c62828", \.expired), ("paused", "#f9a825", \.paused), ("active", "#1565c0", \.active),
  ]
  static let rateColor = "#6a1b9a"

  var svg: String {
    let plotWidth = Self.width - Self.left - Self.right
    let plotHeight = Self.height - Self.top - Self.bottom
    let bottom = Self.top + plotHeight
    let periods = stats.periods
    let most = max(1, periods.map(\.started).max() ?? 1)
    let scale = MarkupText.niceCeiling(Double(most))
    let slot = plotWidth / Double(max(1, periods.count))
    var out = """
      <?xml version="1.0" encoding="UTF-8"?>
      <svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="\(Int(Self.width))" height="\(Int(Self.height))" \
      viewBox="0 0 \(Int(Self.width)) \(Int(Self.height))" font-family="sans-serif" font-size="12">
      <rect x="0" y="0" width="\(Int(Self.width))" height="\(Int(Self.height))" fill="#ffffff"/>
      <text x="\(n(Self.width / 2))" y="24" text-anchor="middle" font-size="16">\(MarkupText.escaped(title))</text>

      """
    // The legend, in one row under the title.
    var x = Self.left
    for entry in Self.series.map({ ($0.name, $0.color) }) + [("conversion rate", Self.rateColor)] {
      out += "<rect x=\"\(n(x))\" y=\"40\" width=\"12\" height=\"12\" fill=\"\(entry.1)\"/>"
      out += "<text x=\"\(n(x + 16))\" y=\"50\">\(entry.0)</text>\n"
      x += 28 + Double(entry.0.count) * 7
    }
    // Grid and the scales: trials on the left, the rate on the right.
    for step in 0...5 {
      let y = bottom - plotHeight * Double(step) / 5
      out += "<line x1=\"\(n(Self.left))\" y1=\"\(n(y))\" x2=\"\(n(Self.left + plotWidth))\" y2=\"\(n(y))\" "
      out += "stroke=\"#e0e0e0\"/>\n"
      out +=
        "<text x=\"\(n(Self.left - 6))\" y=\"\(n(y + 4))\" text-anchor=\"end\">\(MarkupText.count(scale * Double(step) / 5))</text>"
      out += "<text x=\"\(n(Self.left + plotWidth + 6))\" y=\"\(n(y + 4))\">\(step * 20)%</text>\n"
    }
    // The bars.
    for (index, period) in periods.enumerated() {
      let barX = Self.left + slot * Double(index) + slot * 0.15
      var y = bottom
      for part in Self.series {
        let value = period[keyPath: part.value]
        guard value > 0 else { continue }
        let height = plotHeight * Double(value) / scale
        y -= height
        out += "<rect x=\"\(n(barX))\" y=\"\(n(y))\" width=\"\(n(slot * 0.7))\" height=\"\(n(height))\" "
        out += "fill=\"\(part.color)\"><title>\(period.start) \(part.name): \(value)</title></rect>\n"
      }
    }
    // The conversion rate: a line through the periods that have one, broken where one has none.
    var segment: [String] = []
    func flush() {
      if segment.count > 1 {
        out +=
          "<polyline points=\"\(segment.joined(separator: " "))\" fill=\"none\" stroke=\"\(Self.rateColor)\" "
        out += "stroke-width=\"2\"/>\n"
      }
      segment = []
    }
    for (index, period) in periods.enumerated() {
      guard let rate = period.conversionRate else {
        flush()
        continue
      }
      let point = (Self.left + slot * (Double(index) + 0.5), bottom - plotHeight * rate)
      segment.append("\(n(point.0)),\(n(point.1))")
      out += "<circle cx=\"\(n(point.0))\" cy=\"\(n(point.1))\" r=\"3.5\" fill=\"\(Self.rateColor)\">"
      out += "<title>\(period.start) conversion rate: \(decimal(rate * 100, digits: 1))%</title></circle>\n"
    }
    flush()
    // The axes, the periods under them (at most about 12 labels), and the axes' labels.
    out +=
      "<line x1=\"\(n(Self.left))\" y1=\"\(n(bottom))\" x2=\"\(n(Self.left + plotWidth))\" y2=\"\(n(bottom))\" "
    out += "stroke=\"#000000\"/>\n"
    out +=
      "<line x1=\"\(n(Self.left))\" y1=\"\(n(Self.top))\" x2=\"\(n(Self.left))\" y2=\"\(n(bottom))\" stroke=\"#000000\"/>\n"
    let every = max(1, (periods.count + 11) / 12)
    for (index, period) in periods.enumerated() where index % every == 0 {
      let labelX = Self.left + slot * (Double(index) + 0.5)
      out += "<text x=\"\(n(labelX))\" y=\"\(n(bottom + 18))\" text-anchor=\"middle\" font-size=\"11\">"
      out += "\(period.start)</text>\n"
    }
    out += "<text x=\"\(n(Self.left + plotWidth / 2))\" y=\"\(n(Self.height - 20))\" text-anchor=\"middle\">"
    out += "cohort: \(stats.by.rawValue) of start (UTC)</text>\n"
    out +=
      "<text transform=\"translate(20 \(n(Self.top + plotHeight / 2))) rotate(-90)\" text-anchor=\"middle\">"
    out += "trials started</text>\n"
    out += "<text transform=\"translate(\(n(Self.width - 16)) \(n(Self.top + plotHeight / 2))) rotate(90)\" "
    out += "text-anchor=\"middle\">conversion rate (converted of ended)</text>\n"
    out += "</svg>\n"
    return out
  }

  var title: String {
    "Trial cohorts by \(stats.by.rawValue)" + (stats.plan.map { ", plan \($0)" } ?? "")
      + ": \(stats.total.started) started, "
      + (stats.total.conversionRate.map { decimal($0 * 100, digits: 1) + "% converted" } ?? "none ended")
  }

  /// A coordinate, to a tenth.
  private func n(_ value: Double) -> String { decimal(value, digits: 1) }
}
