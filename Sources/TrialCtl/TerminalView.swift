import TrialControl

#if canImport(Glibc)
  import Glibc
#endif

/// Where text goes: standard output or error, or a buffer in tests.
public protocol TextOutput: AnyObject {
  /// Writes `line` and a newline.
  func write(line: String)
}

/// Writes to a file descriptor (standard output or error), unbuffered, a line at a time.
public final class FileOutput: TextOutput {
  private let descriptor: Int32

  public init(fileDescriptor: Int32) {
    descriptor = fileDescriptor
  }

  public static var standardOutput: FileOutput { FileOutput(fileDescriptor: STDOUT_FILENO) }
  public static var standardError: FileOutput { FileOutput(fileDescriptor: STDERR_FILENO) }

  /// Writes the whole line, again after a partial write or an interruption; gives up on any
  /// other error (a closed pipe, a full disk), as the line has nowhere else to go.
  public func write(line: String) {
    writeAll(descriptor, Array((line + "\n").utf8))
  }
}

/// Collects lines in memory.
public final class BufferOutput: TextOutput {
  public private(set) var lines: [String] = []

  public init() {}

  public func write(line: String) {
    lines.append(line)
  }

  public var text: String { lines.map { $0 + "\n" }.joined() }
}

/// Prints view models as they are: tables with aligned columns, label/value blocks. Does no
/// formatting of values of its own.
public final class TerminalView: TrialPresenterOutput {
  private let output: any TextOutput
  private let notices: any TextOutput

  public init(output: any TextOutput, notices: any TextOutput) {
    self.output = output
    self.notices = notices
  }

  public func showTrial(_ viewModel: TrialViewModel) {
    output.write(line: viewModel.headline)
    writeDetails(viewModel.details)
  }

  public func showEventLine(_ viewModel: EventLineViewModel) {
    output.write(line: viewModel.line)
  }

  public func showDetails(_ viewModel: DetailsViewModel) {
    output.write(line: viewModel.headline)
    writeDetails(viewModel.details)
  }

  public func showList(_ viewModel: ListViewModel) {
    if let title = viewModel.title { output.write(line: title) }
    if let message = viewModel.emptyMessage, viewModel.table.rows.isEmpty {
      output.write(line: message)
    } else {
      writeTable(viewModel.table)
    }
    if let continuation = viewModel.continuation { notices.write(line: continuation) }
  }

  public func showMessage(_ text: String) {
    output.write(line: text)
  }

  public func showNotice(_ text: String) {
    notices.write(line: text)
  }

  private func writeDetails(_ details: [LabeledValue]) {
    let width = details.map(\.label.count).max() ?? 0
    for detail in details {
      output.write(line: "  " + pad(detail.label, to: width) + "  " + detail.value)
    }
  }

  private func writeTable(_ table: TableViewModel) {
    var widths = table.columns.map(\.count)
    for row in table.rows {
      for (index, cell) in row.enumerated() where index < widths.count {
        widths[index] = max(widths[index], cell.count)
      }
    }
    func line(_ cells: [String]) -> String {
      var text = ""
      for (index, cell) in cells.enumerated() {
        let last = index == cells.count - 1
        text += last ? cell : pad(cell, to: widths[index]) + "  "
      }
      while text.hasSuffix(" ") { text.removeLast() }
      return text
    }
    output.write(line: line(table.columns))
    for row in table.rows { output.write(line: line(row)) }
  }

  private func pad(_ text: String, to width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
  }
}
