import FoundationEssentials
import TrialControl

/// The HTTP status of each Varlink error the daemon answers with: the client learns what kind of
/// failure it met from the status alone, and which from the body's `error`.
enum ErrorStatus {
  static func of(_ name: String) -> Int {
    typealias N = ControlError.Name
    switch name {
    case N.invalidParameter, N.invalidMessage, N.expectedMore: return 400
    case N.permissionDenied: return 403
    case N.interfaceNotFound, N.methodNotFound, N.trialNotFound, N.planNotFound, N.consumerNotFound,
      N.webhookNotFound, N.cursorNotFound, N.noSuchMetric:
      return 404
    case N.subjectAlreadyActive, N.trialNotActive, N.trialNotPaused, N.trialNotCancelling, N.consumerExists,
      N.trialAlreadyUsed, N.webhookSenderActive, N.cursorGeneration, N.extensionRefused:
      return 409
    case N.eventsPruned: return 410
    case N.messageTooLarge: return 413
    case N.tooManyConnections, N.webhookSenderUnavailable, N.storeUnavailable: return 503
    default: return 500
    }
  }
}

/// JSON strings, as the gateway writes its own bodies and reads one value of a reply.
enum JSONText {
  /// `text` as a JSON string, quotes included.
  static func string(_ text: String) -> [UInt8] {
    (try? Array(JSONEncoder().encode(text))) ?? Array("\"\"".utf8)
  }

  /// The string a JSON string literal `bytes` stands for, or nil.
  static func decodeString(_ bytes: [UInt8]) -> String? {
    try? JSONDecoder().decode(String.self, from: Data(bytes))
  }
}
