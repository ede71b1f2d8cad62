import TrialDaemon
import TrialStore

// trialwatchd: the daemon. Everything it does lives in TrialDaemon; here it is only told
// where its store comes from.
TrialwatchdCommand.main(
  openRepository: { try LMDBTrialRepository(directory: $0) }, services: [ControlService()])
