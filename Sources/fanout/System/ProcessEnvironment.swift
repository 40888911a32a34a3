#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// The process's environment, read with the C library: the tool links no Foundation (see `cFormat`).
enum ProcessEnvironment {
    /// The value of `name`, or nil when it is not set.
    static func value(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// Every variable, for a child's environment; of a duplicate name, the first, which is what `getenv` sees.
    static var all: [String: String] {
        var variables: [String: String] = [:]
        var cursor = environ
        while let entry = cursor.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "="), variables[String(text[..<equals])] == nil {
                variables[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            cursor += 1
        }
        return variables
    }
}
