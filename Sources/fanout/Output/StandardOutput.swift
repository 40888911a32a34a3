import FanoutProtocol
#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// Buffered stdout for message streams: bytes collect here and go out in one write per read batch, so a
/// `| grep` downstream sees each batch promptly without a system call per message.
final class StandardOutput {
    private var buffer: [UInt8] = []

    init() { buffer.reserveCapacity(64 * 1024) }

    func append(_ bytes: UnsafeRawBufferPointer) { buffer.append(contentsOf: bytes) }
    func append(_ text: String) { buffer.append(contentsOf: text.utf8) }
    func append(_ byte: UInt8) { buffer.append(byte) }

    func flush() {
        var offset = 0
        while offset < buffer.count {
            let written = buffer[offset...].withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                // The reader went away (| head): stop quietly, as command-line tools do.
                exit(0)
            }
            offset += written
        }
        buffer.removeAll(keepingCapacity: true)
    }

    static var isTerminal: Bool { isatty(1) == 1 }
}

enum JSON {
    /// A JSON string literal for `text`, quotes included: `JSONText`'s, so that `fanout` and the HTTP front
    /// write the same text for the same string.
    static func string(_ text: String) -> String {
        JSONText.quoted(text)
    }

    /// A number when `text` is an integer or a decimal, else a string.
    static func value(_ text: String) -> String {
        if Int(text) != nil || (Double(text) != nil && text.contains(".")) { return text }
        return string(text)
    }

    /// A payload as a JSON field: `"payload"` with its text when it is UTF-8 a line can carry, else
    /// `"payload_base64"` with its bytes in base64 (the event stream's name for the same thing), so that any
    /// bytes come through unchanged.
    static func payload(_ bytes: [UInt8]) -> (String, String) {
        if !bytes.contains(0x0A), let text = String(validating: bytes, as: UTF8.self) {
            return ("payload", string(text))
        }
        return ("payload_base64", string(Base64.encode(bytes)))
    }

    static func object(_ pairs: [(String, String)]) -> String {
        "{" + pairs.map { "\(string($0.0)):\($0.1)" }.joined(separator: ",") + "}"
    }
}

/// A plain text table: a header row and aligned columns, numbers right-aligned.
struct TextTable {
    let headers: [String]
    var rows: [[String]] = []

    func render() -> String {
        var widths = headers.map(\.count)
        for row in rows { for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) } }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { index, cell in
                let pad = String(repeating: " ", count: widths[index] - cell.count)
                let numeric = Double(cell) != nil
                return index == cells.count - 1 && !numeric ? cell : (numeric ? pad + cell : cell + pad)
            }.joined(separator: "  ")
        }
        return ([line(headers)] + rows.map(line)).joined(separator: "\n")
    }
}
