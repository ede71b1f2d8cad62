import FoundationEssentials
import TrialControl
import TrialCore

// The event log and its consumers, as the reader sees them.
extension TrialPresenter {
  public func present(eventLog log: EventLogObject) {
    let kept = count(log.events, "event")
    let headline: String
    if log.last == .origin {
      headline = "Event log: empty (no event was ever logged)"
    } else if log.events == 0 {
      headline = "Event log: no events kept (all pruned); newest was \(log.last)"
    } else {
      headline = "Event log: \(kept) kept, newest \(log.last)"
    }
    var details = [
      LabeledValue(label: "Newest", value: log.last == .origin ? "none" : log.last.description),
      LabeledValue(label: "Oldest kept", value: log.oldest?.description ?? "none"),
      LabeledValue(label: "Events kept", value: "\(log.events)"),
      LabeledValue(label: "Read all from", value: "--after \(log.start) (or --from-oldest)"),
      LabeledValue(
        label: "Retention",
        value: "\(brief(log.retention.duration)) once every consumer has acknowledged them"),
    ]
    if let cap = log.maxRetention {
      details.append(
        LabeledValue(label: "Retention cap", value: "\(brief(cap.duration)), acknowledged or not"))
    } else {
      details.append(
        LabeledValue(label: "Retention cap", value: "none: kept until every consumer acknowledged"))
    }
    output.showDetails(DetailsViewModel(headline: headline, details: details))
  }

  public func present(consumers: [ConsumerObject]) {
    let rows = consumers.map { consumer in
      [
        consumer.name, consumer.acknowledged.description, "\(consumer.lag)", "\(consumer.lost)",
        consumer.acknowledgedAt.map(date) ?? "never",
      ]
    }
    output.showList(
      ListViewModel(
        table: TableViewModel(columns: ["NAME", "POSITION", "LAG", "LOST", "LAST ACKNOWLEDGED"], rows: rows),
        emptyMessage: "No consumers."))
  }

  public func present(consumer: ConsumerObject) {
    output.showDetails(viewModel(for: consumer))
  }

  public func presentRemoved(consumer name: String) {
    output.showMessage("Removed consumer \(name).")
  }

  public func viewModel(for consumer: ConsumerObject) -> DetailsViewModel {
    let state = consumer.lag == 0 ? "up to date" : "\(count(consumer.lag, "event")) behind"
    var lost = "none"
    if consumer.lost > 0 {
      lost = count(consumer.lost, "event") + (consumer.lostAt.map { ", the last on \(date($0))" } ?? "")
    }
    return DetailsViewModel(
      headline: "\(consumer.name): \(state)",
      details: [
        LabeledValue(label: "Position", value: consumer.acknowledged.description),
        LabeledValue(label: "Lag", value: count(consumer.lag, "event")),
        LabeledValue(label: "Lost", value: lost),
        LabeledValue(label: "Last acknowledged", value: consumer.acknowledgedAt.map(date) ?? "never"),
        LabeledValue(label: "Created", value: date(consumer.createdAt)),
      ])
  }

  /// `1 event`, `3 events`.
  private func count(_ number: Int, _ noun: String) -> String {
    number == 1 ? "1 \(noun)" : "\(number) \(noun)s"
  }
}
