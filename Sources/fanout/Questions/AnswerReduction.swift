/// What `fanout ask --reduce` makes of the answers, once the question has closed. Pure: the answers in, the
/// text to print (or why not) out.
enum AnswerReduction: String, CaseIterable {
    /// Every payload, one per line, in the order they came.
    case all
    /// How many answers came.
    case count
    /// Numbers: integers add as 64-bit integers (an overflow is an error); any decimal makes it a decimal sum.
    case sum, min, max
    /// Integers folded bitwise (64-bit two's complement); a decimal is an error.
    case and, or
    /// One JSON array of `{"responder":..., "payload":...}` objects, in the order they came.
    case json

    /// Why an answer cannot be reduced: the exit status is `ExitStatus.badAnswer`.
    struct Failure: Error, Equatable {
        let description: String
    }

    /// The reduced value's text, or nil for an empty set where the reduction has no value (min, max, and, or):
    /// nothing is printed then. `all` gives one line per answer.
    func reduce(_ answers: [(responder: String, payload: [UInt8])]) throws(Failure) -> String? {
        switch self {
        case .all:
            guard !answers.isEmpty else { return nil }
            return answers.map { String(decoding: $0.payload, as: UTF8.self) }.joined(separator: "\n")
        case .count:
            return String(answers.count)
        case .json:
            let items = answers.map { answer in
                JSON.object([("responder", JSON.string(answer.responder)), JSON.payload(answer.payload)])
            }
            return "[" + items.joined(separator: ",") + "]"
        case .sum, .min, .max:
            let numbers = try answers.map { answer throws(Failure) in try Self.number(answer) }
            if numbers.isEmpty { return self == .sum ? "0" : nil }
            if numbers.allSatisfy({ $0.integer != nil }) {
                let integers = numbers.map { $0.integer! }
                switch self {
                case .sum:
                    var total: Int64 = 0
                    for value in integers {
                        let (added, overflow) = total.addingReportingOverflow(value)
                        guard !overflow else { throw Failure(description: "the sum overflows 64-bit integers") }
                        total = added
                    }
                    return String(total)
                case .min: return String(integers.min()!)
                default: return String(integers.max()!)
                }
            }
            let decimals = numbers.map(\.decimal)
            switch self {
            case .sum: return String(decimals.reduce(0, +))
            case .min: return String(decimals.min()!)
            default: return String(decimals.max()!)
            }
        case .and, .or:
            let integers = try answers.map { answer throws(Failure) -> Int64 in
                guard let value = try Self.number(answer).integer else {
                    throw Failure(description: "answer from \(answer.responder) is not an integer: "
                                  + Self.quoted(answer.payload))
                }
                return value
            }
            guard let first = integers.first else { return nil }
            return String(integers.dropFirst().reduce(first, self == .and ? { $0 & $1 } : { $0 | $1 }))
        }
    }

    /// A payload as a number: decimal digits with an optional sign, a point and an exponent, spaces around
    /// allowed. Hex, `inf` and `nan` are not numbers here.
    private static func number(_ answer: (responder: String, payload: [UInt8])) throws(Failure)
        -> (integer: Int64?, decimal: Double) {
        let text = String(decoding: answer.payload, as: UTF8.self).trimmingSpaces
        let numeric = !text.isEmpty && text.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
        }
        if numeric, let integer = Int64(text) { return (integer, Double(integer)) }
        guard numeric, let decimal = Double(text), decimal.isFinite else {
            throw Failure(description: "answer from \(answer.responder) is not a number: " + quoted(answer.payload))
        }
        return (nil, decimal)
    }

    private static func quoted(_ payload: [UInt8]) -> String {
        JSON.string(String(decoding: payload.prefix(80), as: UTF8.self))
    }
}

extension String {
    /// Without the spaces, tabs and CRs at either end.
    var trimmingSpaces: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        return String(drop(while: isSpace).reversed().drop(while: isSpace).reversed())
    }
}
