import Testing
import TrialControl
import TrialDaemonTesting

@testable import TrialControlServer

/// The catalog of method kinds that clients passing calls on without decoding them rely on (the
/// HTTP gateway decides by it what a read token may call) against the daemon's own routes.
@Suite struct MethodCatalogTests {
  @Test func catalog_NamesEveryRoute_WithItsKind() throws {
    let fixture = try ControlFixture()
    let routes = fixture.engine.handlers.routes + fixture.engine.metrics.routes
    for route in routes {
      #expect(VarlinkInterfaces.methodKinds[route.method] == route.kind, "\(route.method)")
    }
    let served =
      Set(routes.map(\.method))
      .union([VarlinkService.getInfo.qualifiedName, VarlinkService.getInterfaceDescription.qualifiedName])
    #expect(Set(VarlinkInterfaces.methodKinds.keys) == served)
  }
}
