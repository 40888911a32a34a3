/// Names one membership of a `MulticastDelegate`, so that it can be removed without the member at hand.
public struct MembershipToken: Hashable, Sendable, CustomStringConvertible {
    let value: UInt64

    public var description: String { "membership#\(value)" }
}
