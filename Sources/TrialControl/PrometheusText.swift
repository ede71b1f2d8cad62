/// The metrics in Prometheus's text exposition format (version 0.0.4), as node_exporter's
/// textfile collector reads them: `# HELP` and `# TYPE` once per family, then its samples.
/// Names are `trialwatch_<family>`; a counter's samples end in `_total`; the three families
/// of a distribution (`X_bucket`, `X_sum`, `X_count`) make one histogram `X`; a string family
/// is a gauge of 1 whose label carries the text (`trialwatch_build_info{version="…"} 1`).
///
/// Written here rather than through swift-prometheus: its histograms only record single
/// observations, and the daemon hands over buckets already counted.
public enum PrometheusText {
  /// The exposition of `metrics`, families in the order of `families` (Describe's).
  public static func render(families: [MetricFamilyReply], metrics: [MetricReply]) -> String {
    var byFamily: [String: [MetricReply]] = [:]
    for metric in metrics { byFamily[metric.name, default: []].append(metric) }
    let names = Set(families.map(\.name))
    var out = ""
    var done = Set<String>()
    for family in families where !done.contains(family.name) {
      let base = promName(family.name)
      if let histogram = histogramBase(family.name), names.contains(histogram + "_sum"),
        names.contains(histogram + "_count")
      {
        let parts = [family.name, histogram + "_sum", histogram + "_count"]
        done.formUnion(parts)
        let samples = parts.flatMap { byFamily[$0] ?? [] }
        guard !samples.isEmpty else { continue }
        header(&out, promName(histogram), family.description, "histogram")
        for sample in samples { line(&out, promName(sample.name), sample.fields, sample.value) }
        continue
      }
      done.insert(family.name)
      guard let samples = byFamily[family.name], !samples.isEmpty else { continue }
      switch family.type {
      case .counter:
        header(&out, base + "_total", family.description, "counter")
        for sample in samples { line(&out, base + "_total", sample.fields, sample.value) }
      case .gauge:
        header(&out, base, family.description, "gauge")
        for sample in samples { line(&out, base, sample.fields, sample.value) }
      case .string:
        header(&out, base, family.description, "gauge")
        let label = base.hasSuffix("build_info") ? "version" : "value"
        for sample in samples {
          var fields = sample.fields ?? [:]
          fields[label] = sample.value.description
          line(&out, base, fields, .integer(1))
        }
      }
    }
    return out
  }

  /// `io.trialwatch.trials` → `trialwatch_trials`.
  static func promName(_ name: String) -> String {
    let short =
      name.hasPrefix(SystemdMetrics.prefix) ? String(name.dropFirst(SystemdMetrics.prefix.count)) : name
    return "trialwatch_" + short.map { $0.isLetter || $0.isNumber || $0 == "_" ? String($0) : "_" }.joined()
  }

  /// `io.trialwatch.x_seconds_bucket` → `io.trialwatch.x_seconds`.
  private static func histogramBase(_ name: String) -> String? {
    name.hasSuffix("_bucket") ? String(name.dropLast("_bucket".count)) : nil
  }

  private static func header(_ out: inout String, _ name: String, _ help: String, _ type: String) {
    out += "# HELP \(name) \(escape(help, quotes: false))\n# TYPE \(name) \(type)\n"
  }

  private static func line(
    _ out: inout String, _ name: String, _ fields: [String: String]?, _ value: MetricValue
  ) {
    out += name
    if let fields, !fields.isEmpty {
      // `le` last, as Prometheus's own clients write it.
      let keys = fields.keys.sorted { ($0 == "le" ? 1 : 0, $0) < ($1 == "le" ? 1 : 0, $1) }
      out += "{" + keys.map { "\($0)=\"\(escape(fields[$0]!, quotes: true))\"" }.joined(separator: ",") + "}"
    }
    switch value {
    case .text(let text): out += " \(Double(text).map { MetricValue.number($0).description } ?? "NaN")\n"
    default: out += " \(value.description)\n"
    }
  }

  /// Backslash and newline escaped (and the double quote, in a label value).
  private static func escape(_ text: String, quotes: Bool) -> String {
    var out = ""
    for character in text {
      switch character {
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      case "\"" where quotes: out += "\\\""
      default: out.append(character)
      }
    }
    return out
  }
}
