import Dispatch

#if canImport(Glibc)
  import Glibc
#endif

/// Turns SIGHUP, SIGTERM and SIGINT into calls on the daemon's queue.
public final class SignalWatcher: @unchecked Sendable {
  // @unchecked: the sources are created once and only cancelled afterwards.
  private var sources: [any DispatchSourceSignal] = []

  public init(queue: DispatchQueue, handlers: [Int32: @Sendable () -> Void]) {
    for (signo, handler) in handlers {
      signal(signo, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: signo, queue: queue)
      source.setEventHandler(handler: handler)
      source.resume()
      sources.append(source)
    }
  }

  public func stop() {
    for source in sources { source.cancel() }
  }
}
