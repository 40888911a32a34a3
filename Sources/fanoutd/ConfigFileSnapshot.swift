import Configuration
import Yams

/// The configuration file as swift-configuration reads it: scalars and lists of scalars. The sections that
/// are lists of records (`history:`) are not supported there; Yams reads them on their own
/// (`HistorySection`), and this snapshot leaves them out of the rest.
final class ConfigFileSnapshot: FileConfigSnapshot {
    typealias ParsingOptions = YAMLSnapshot.ParsingOptions

    /// Top-level keys read by Yams alone.
    static let recordSections = ["history"]

    private let inner: YAMLSnapshot

    init(data: RawSpan, providerName: String, parsingOptions: ParsingOptions) throws {
        let bytes = data.withUnsafeBytes { Array($0) }
        var text = String(decoding: bytes, as: UTF8.self)
        if case .mapping(var mapping)? = try Yams.compose(yaml: text),
           Self.recordSections.contains(where: { mapping[$0] != nil }) {
            for key in Self.recordSections { mapping[key] = nil }
            text = try Yams.serialize(node: .mapping(mapping))
        }
        let cleaned = Array(text.utf8)
        inner = try YAMLSnapshot(data: cleaned.span.bytes, providerName: providerName, parsingOptions: parsingOptions)
    }

    var providerName: String { inner.providerName }

    func value(forKey key: AbsoluteConfigKey, type: ConfigType) throws -> LookupResult {
        try inner.value(forKey: key, type: type)
    }

    var description: String { inner.description }
    var debugDescription: String { inner.debugDescription }
}
