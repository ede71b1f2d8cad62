import TrialDaemon
import TrialPostgres
import TrialStore

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
