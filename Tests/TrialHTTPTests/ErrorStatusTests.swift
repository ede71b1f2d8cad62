import Testing
import TrialControl

@testable import TrialHTTP

/// The statuses of the daemon's errors that a change of trials meets: each a client tells apart.
@Suite struct ErrorStatusTests {
  @Test func extensionRefused_IsAConflict_AsTheOtherRefusalsOfATrialsState() {
    typealias N = ControlError.Name
    #expect(ErrorStatus.of(N.extensionRefused) == 409)
    #expect(ErrorStatus.of(N.trialNotActive) == 409 && ErrorStatus.of(N.trialAlreadyUsed) == 409)
    #expect(ErrorStatus.of(N.invalidParameter) == 400)
  }
}
