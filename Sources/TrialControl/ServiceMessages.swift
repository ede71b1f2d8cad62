// The parameters and replies of org.varlink.service, the interface every Varlink service
// serves, as Codable types.

public struct GetInfoReply: Codable, Hashable, Sendable {
  public var vendor: String
  public var product: String
  public var version: String
  public var url: String
  public var interfaces: [String]

  public init(vendor: String, product: String, version: String, url: String, interfaces: [String]) {
    self.vendor = vendor
    self.product = product
    self.version = version
    self.url = url
    self.interfaces = interfaces
  }
}

public struct GetInterfaceDescriptionParameters: VarlinkParameters, Hashable {
  public var interface: String

  public init(interface: String) {
    self.interface = interface
  }
}

public struct GetInterfaceDescriptionReply: Codable, Hashable, Sendable {
  public var description: String

  public init(description: String) {
    self.description = description
  }
}
