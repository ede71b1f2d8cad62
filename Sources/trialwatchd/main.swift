import Glibc
import TrialCore
import TrialCtl
import TrialDaemon
import TrialHTTP
import TrialPostgres
import TrialStore
import TrialWebhookSender

// One program for every command, so that the Swift runtime is installed once: started as
// trialwatchctl (the installed trialwatchctl is a link to trialwatchd) it is the client; as
// trialwatch-webhooks (a link too), the webhooks' sender; as trialwatch-http, the HTTP gateway;
// started by any other name, the daemon.
switch FilePaths.lastComponent(CommandLine.arguments.first ?? "") {
case "trialwatchctl": exit(TrialwatchCtl.runProcess())
case "trialwatch-webhooks": WebhookSenderCommand.main(version: Daemon.version)
case "trialwatch-http": GatewayCommand.main(version: Daemon.version)
default: break
}

// trialwatchd: the daemon. Everything it does lives in TrialDaemon; here it is only told
// which stores there are: LMDB files for one host, PostgreSQL for a fleet.
TrialwatchdCommand.main(
  stores: StoreBackends(
    local: { try LMDBTrialRepository.open(directory: $0) },
    joinFleet: {
      try PostgresFleet(conninfo: $0.connection, node: $0.nodeName, shards: $0.shards, version: $1)
    },
    checkFleet: { try PostgresFleet.check(conninfo: $0.connection, shards: $0.shards) },
    openFleet: {
      try PostgresFleet.openForImport(conninfo: $0.connection, node: $0.nodeName, shards: $0.shards)
    }),
  services: [ControlService()])
