import TrialControl
import TrialCore

extension TrialPresenter {
  /// `stats --variants`: a row for each variant (its trials, ended, converted, the rate and its
  /// 95 % interval), then, for two, the z-test's p-value and what it says in words.
  public func present(variants stats: GetStatsReply) {
    let variants = stats.variants ?? []
    func percent(_ value: Double) -> String { decimal(value * 100, digits: 1) + "%" }
    let rows = variants.map { variant in
      [
        variant.variant, variant.weight.map(String.init) ?? "-", "\(variant.started)",
        "\(variant.converted + variant.cancelled + variant.expired)", "\(variant.converted)",
        variant.conversionRate.map(percent) ?? "-",
        variant.conversionLow.flatMap { low in variant.conversionHigh.map { "\(percent(low))-\(percent($0))" }
        }
          ?? "-",
      ]
    }
    output.showMessage(
      "Variants of plan \(stats.plan ?? "-"), trials started \(stats.total.start) to \(stats.total.end) (UTC):"
    )
    output.showList(
      ListViewModel(
        table: TableViewModel(
          columns: ["VARIANT", "WEIGHT", "STARTED", "ENDED", "CONVERTED", "RATE", "95% INTERVAL"], rows: rows),
        emptyMessage: ""))
    if let line = Self.comparisonLine(stats) { output.showMessage(line) }
  }

  /// The p-value line, with its plain reading; nil without a comparison.
  static func comparisonLine(_ stats: GetStatsReply) -> String? {
    guard let test = stats.comparison else {
      return (stats.variants ?? []).count == 2
        ? "No comparison yet: each variant needs an ended trial." : nil
    }
    let points = decimal(abs(test.difference) * 100, digits: 1)
    let p = test.pValue < 0.0001 ? "p < 0.0001" : "p = \(decimal(test.pValue, digits: 4))"
    let head =
      "\(test.second) vs \(test.first): \(test.difference >= 0 ? "+" : "-")\(points) points, z = "
      + "\(decimal(test.z, digits: 2)), \(p) (two-proportion z-test, two-sided)."
    let reading =
      test.pValue < 0.05
      ? " A difference this large would come by chance less than 5 times in 100 were the two rates "
        + "the same: the variants convert differently."
      : " A difference this large comes by chance 5 times in 100 or more when the two rates are the "
        + "same: these figures do not tell the variants apart."
    return head + reading
  }
}

/// `stats --variants --svg`: each variant's conversion rate a bar, side by side, its 95 % Wilson
/// interval a whisker, its counts under it; the z-test in the title. Plain SVG 1.1.
struct VariantChart {
  let stats: GetStatsReply

  init(_ stats: GetStatsReply) {
    self.stats = stats
  }

  static let width = 720.0
  static let height = 480.0
  static let left = 80.0
  static let top = 70.0
  static let bottom = 80.0
  static let barColor = "#2e7d32"

  var svg: String {
    let variants = stats.variants ?? []
    let plotWidth = Self.width - Self.left - 40
    let plotHeight = Self.height - Self.top - Self.bottom
    let bottom = Self.top + plotHeight
    // The scale in percent, up to the highest whisker.
    let highest = variants.compactMap { $0.conversionHigh ?? $0.conversionRate }.max() ?? 0
    let scale = MarkupText.niceCeiling(max(1, highest * 100))
    func y(_ rate: Double) -> Double { bottom - plotHeight * rate * 100 / scale }
    let slot = plotWidth / Double(max(1, variants.count))
    var out = """
      <?xml version="1.0" encoding="UTF-8"?>
      <svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="\(Int(Self.width))" height="\(Int(Self.height))" \
      viewBox="0 0 \(Int(Self.width)) \(Int(Self.height))" font-family="sans-serif" font-size="12">
      <rect x="0" y="0" width="\(Int(Self.width))" height="\(Int(Self.height))" fill="#ffffff"/>
      <text x="\(n(Self.width / 2))" y="24" text-anchor="middle" font-size="16">\(MarkupText.escaped(title))</text>
      <text x="\(n(Self.width / 2))" y="46" text-anchor="middle">\(MarkupText.escaped(subtitle))</text>

      """
    for step in 0...5 {
      let value = scale * Double(step) / 5
      let lineY = bottom - plotHeight * Double(step) / 5
      out += "<line x1=\"\(n(Self.left))\" y1=\"\(n(lineY))\" x2=\"\(n(Self.left + plotWidth))\" "
      out += "y2=\"\(n(lineY))\" stroke=\"#e0e0e0\"/>"
      out += "<text x=\"\(n(Self.left - 6))\" y=\"\(n(lineY + 4))\" text-anchor=\"end\">"
      out += "\(MarkupText.count(value))%</text>\n"
    }
    for (index, variant) in variants.enumerated() {
      let centre = Self.left + slot * (Double(index) + 0.5)
      let name = MarkupText.escaped(variant.variant)
      if let rate = variant.conversionRate {
        let barWidth = min(120, slot * 0.5)
        out += "<rect x=\"\(n(centre - barWidth / 2))\" y=\"\(n(y(rate)))\" width=\"\(n(barWidth))\" "
        out += "height=\"\(n(bottom - y(rate)))\" fill=\"\(Self.barColor)\">"
        out += "<title>\(name): \(percent(rate))</title></rect>\n"
      }
      if let low = variant.conversionLow, let high = variant.conversionHigh {
        let cap = min(40, slot * 0.2)
        out += "<g stroke=\"#000000\" stroke-width=\"1.5\"><title>\(name): 95% interval "
        out += "\(percent(low)) to \(percent(high))</title>"
        out += "<line x1=\"\(n(centre))\" y1=\"\(n(y(high)))\" x2=\"\(n(centre))\" y2=\"\(n(y(low)))\"/>"
        for end in [low, high] {
          out += "<line x1=\"\(n(centre - cap / 2))\" y1=\"\(n(y(end)))\" x2=\"\(n(centre + cap / 2))\" "
          out += "y2=\"\(n(y(end)))\"/>"
        }
        out += "</g>\n"
      }
      out +=
        "<text x=\"\(n(centre))\" y=\"\(n(bottom + 20))\" text-anchor=\"middle\" font-size=\"13\">\(name)</text>\n"
      out += "<text x=\"\(n(centre))\" y=\"\(n(bottom + 38))\" text-anchor=\"middle\" font-size=\"11\">"
      out += "\(variant.converted) of \(variant.converted + variant.cancelled + variant.expired) ended"
      out += variant.conversionRate.map { ", \(percent($0))" } ?? ""
      out += "</text>\n"
    }
    out +=
      "<line x1=\"\(n(Self.left))\" y1=\"\(n(bottom))\" x2=\"\(n(Self.left + plotWidth))\" y2=\"\(n(bottom))\" "
    out += "stroke=\"#000000\"/>\n"
    out +=
      "<line x1=\"\(n(Self.left))\" y1=\"\(n(Self.top))\" x2=\"\(n(Self.left))\" y2=\"\(n(bottom))\" stroke=\"#000000\"/>\n"
    out +=
      "<text transform=\"translate(20 \(n(Self.top + plotHeight / 2))) rotate(-90)\" text-anchor=\"middle\">"
    out += "conversion rate (converted of ended), 95% interval</text>\n"
    out += "</svg>\n"
    return out
  }

  var title: String {
    "Conversion by variant" + (stats.plan.map { ", plan \($0)" } ?? "")
      + ": \(stats.total.start) to \(stats.total.end)"
  }

  var subtitle: String {
    guard let test = stats.comparison else { return "bars: the rate; whiskers: its 95% Wilson interval" }
    let p = test.pValue < 0.0001 ? "p < 0.0001" : "p = \(decimal(test.pValue, digits: 4))"
    return "\(test.second) vs \(test.first): z = \(decimal(test.z, digits: 2)), \(p) (two-sided)"
  }

  private func percent(_ value: Double) -> String { decimal(value * 100, digits: 1) + "%" }

  /// A coordinate, to a tenth.
  private func n(_ value: Double) -> String { decimal(value, digits: 1) }
}
