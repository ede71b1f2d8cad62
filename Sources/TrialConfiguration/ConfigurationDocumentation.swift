/// The configuration's sections and keys as the manual describes them: trialwatch.conf(5) is
/// generated from this, which is read off the schema the loader applies, so the page cannot
/// miss a key or show another default.
public struct ConfigurationDocumentation: Hashable, Sendable {
  public struct Section: Hashable, Sendable {
    /// The name between the brackets: `Trials` for `[Trials]`.
    public var name: String
    public var summary: String
    public var keys: [Key]
  }

  public struct Key: Hashable, Sendable {
    public var name: String
    /// What a value is: `span`, `path`, `latest|all|skip`.
    public var valueName: String
    /// The built-in default, as the sample configuration writes it.
    public var defaultText: String
    /// The default in words, for one the sample cannot write (`#NodeName=` stands for the host
    /// name); nil when `defaultText` says it.
    public var defaultDescription: String?
    public var meaning: String
  }

  public var sections: [Section]
  /// The one section of a plan file.
  public var plan: Section = PlanFiles.documentation
  /// The sections of a plan file's variants.
  public var variant: Section = VariantSections.documentation
  /// The one section of a webhook endpoint's file.
  public var webhook: Section = WebhookFiles.documentation

  /// Every section and key trialwatchd reads, in the order of the sample configuration.
  public static let current = ConfigurationDocumentation(
    sections: ConfigurationSchema.sections.map { section in
      Section(
        name: section, summary: ConfigurationSchema.sectionSummaries[section] ?? "",
        keys: ConfigurationSchema.keys.filter { $0.section == section }.map {
          Key(
            name: $0.name, valueName: $0.valueName, defaultText: $0.defaultText,
            defaultDescription: $0.defaultDescription, meaning: $0.meaning)
        })
    })

  /// The main configuration file.
  public static let mainFile = DaemonConfiguration.defaultPath
  /// The folder of drop-ins, read after the main file in file-name order.
  public static let dropInDirectory = DaemonConfiguration.defaultPath + ".d"
  /// The folder of plan files, one a plan: `plans/` beside the main file.
  public static let planDirectory = ConfigurationLoader.planDirectory(beside: mainFile)
  /// The folder of webhook endpoints' files, one an endpoint: `webhooks/` beside the main file.
  public static let webhookDirectory = ConfigurationLoader.webhookDirectory(beside: mainFile)
}
