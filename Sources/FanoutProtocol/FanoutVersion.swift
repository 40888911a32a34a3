/// Fanout's version, defined once: `fanoutd --version`, `fanout --version`, INFO's `version`, the Debian
/// package and the man pages (through scripts/version.sh) all report it.
public enum FanoutVersion {
    public static let current = "0.1.0"
}
