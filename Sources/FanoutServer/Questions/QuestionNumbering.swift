import FanoutProtocol

/// The numbers and ids of the server's questions: ids are `<prefix>.<number>`, where the prefix is new each time
/// the server starts, so an id is never reused. O(1) to hand out a number, to write an id and to read one back.
struct QuestionNumbering {
    private(set) var lastNumber: UInt64 = 0
    let prefix: String
    /// The prefix's 8 bytes, as they lie in memory: an id is written and recognised without a String.
    private let prefixWord: UInt64

    init() {
        // Random on every start, so that no id is handed out twice even when the epoch survives a restart.
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789".utf8)
        var generator = SystemRandomNumberGenerator()
        let prefixBytes = (0..<8).map { _ in alphabet.randomElement(using: &generator)! }
        prefix = String(decoding: prefixBytes, as: UTF8.self)
        prefixWord = prefixBytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
    }

    mutating func nextNumber() -> UInt64 {
        lastNumber += 1
        return lastNumber
    }

    func id(of number: UInt64) -> QuestionID {
        QuestionID(prefixWord: prefixWord, number: number)
    }

    /// The number an id of this server names, or nil for an id this server never handed out.
    func number(of id: UnsafeRawBufferPointer) -> UInt64? {
        guard id.count > QuestionID.digitsStart, id.loadUnaligned(as: UInt64.self) == prefixWord,
              id[QuestionID.digitsStart - 1] == UInt8(ascii: ".") else { return nil }
        return DecimalDigits.parse(UnsafeRawBufferPointer(rebasing: id[QuestionID.digitsStart...]))
    }
}

/// A question's id, `<prefix>.<number>`, written on the stack: at most 8 + 1 + 20 bytes.
struct QuestionID {
    static let digitsStart = 9
    private var storage: (UInt64, UInt64, UInt64, UInt64)
    private let count: Int

    init(prefixWord: UInt64, number: UInt64) {
        storage = (prefixWord, 0, 0, 0)
        var digits = 1
        var rest = number
        while rest >= 10 {
            rest /= 10
            digits += 1
        }
        count = Self.digitsStart + digits
        withUnsafeMutableBytes(of: &storage) { [count] raw in
            raw[Self.digitsStart - 1] = UInt8(ascii: ".")
            var value = number
            for index in stride(from: count - 1, through: Self.digitsStart, by: -1) {
                raw[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value % 10)
                value /= 10
            }
        }
    }

    func withBytes<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        withUnsafeBytes(of: storage) { body(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
    }

    var string: String { withBytes { String(decoding: $0, as: UTF8.self) } }
}
