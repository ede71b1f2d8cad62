import TrialCore

// Webhook endpoints' state in the file store: not yet kept (a later schema).

extension PostgresReadTransaction {
  func webhookEndpoint(named name: String) throws -> WebhookEndpointState? { nil }
  func scanWebhookEndpoints(_ body: (WebhookEndpointState) throws -> Bool) throws {}
  func scanWebhookEvents(endpoint: String, after: EventCursor, _ body: (WebhookPendingEvent) throws -> Bool)
    throws
  {}
}

extension PostgresWriteTransaction {
  func putWebhookEndpoint(_ state: WebhookEndpointState) throws {
    throw TrialError.invalid(.consumer, "webhook endpoints are not kept by this store yet")
  }
  func removeWebhookEndpoint(named name: String) throws -> Bool { false }
  func putWebhookEvent(_ event: WebhookPendingEvent) throws {
    throw TrialError.invalid(.consumer, "webhook endpoints are not kept by this store yet")
  }
  func removeWebhookEvents(endpoint: String, through: EventCursor) throws -> Int { 0 }
}
