/// Refuses names that are not settings, so that a typo (`max_conections: 5`) stops the server with the line
/// and the nearest name instead of silently leaving the default in force.
public enum SettingNames {
    /// The first unknown top-level key of the file, by line.
    public static func checkFile(_ document: YAMLDocument) throws(ConfigProblem) {
        let known = Setting.all.map(\.name)
        let unknown = document.settings.keys.filter { Setting.named($0) == nil }
        guard let first = unknown.min(by: { (document.line(of: $0) ?? 0) < (document.line(of: $1) ?? 0) }) else {
            return
        }
        throw ConfigProblem.unknown(first, at: document.line(of: first), known: known)
    }

    /// Variables read at start that are not settings: the history writer's fault seam (docs/testing.md).
    public static let notSettings = ["FANOUTD_HISTORY_FAULTS"]

    /// The first of `variables` (the environment's names) that starts with `FANOUTD_` and names no setting
    /// that the environment may set.
    public static func checkEnvironment(_ variables: [String]) throws(ConfigProblem) {
        let settable = Setting.all.compactMap(\.environmentName)
        for variable in variables.sorted() where variable.hasPrefix(Setting.environmentPrefix) {
            guard !settable.contains(variable), !notSettings.contains(variable) else { continue }
            let name = String(variable.dropFirst(Setting.environmentPrefix.count)).lowercased()
            if let setting = Setting.named(name), setting.kind == .section {
                throw ConfigProblem(line: nil, "\(variable): the \(name) section can only be set in the config file")
            }
            throw ConfigProblem.unknown(variable, at: nil, what: "environment variable", known: settable)
        }
    }

    /// The first key of a nested map (a history rule, the cluster section, a user) that is not one of `known`.
    public static func checkSection(_ fields: [String: YAMLNode], path: String, known: [String],
                                    in document: YAMLDocument?) throws(ConfigProblem) {
        let line: (String) -> Int? = { document?.line(of: path + "." + $0) }
        let unknown = fields.keys.filter { !known.contains($0) }
        guard let first = unknown.min(by: { (line($0) ?? 0, $0) < (line($1) ?? 0, $1) }) else { return }
        throw ConfigProblem.unknown(first, at: line(first), under: path, known: known)
    }
}
