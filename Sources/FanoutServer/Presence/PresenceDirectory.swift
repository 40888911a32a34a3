import FanoutProtocol

/// The members of every node, kept in the cluster's engine: set by the cluster node, nil standalone.
protocol PresenceDirectory: AnyObject {
    /// This node's name in `<node>/<id>`.
    var nodeID: String { get }
    /// A local member joined or left `subject` (called after the local table changed, in order).
    func joined(_ subject: String, member: PresenceMember, connectionID: UInt64)
    func left(_ subject: String, member: PresenceMember, connectionID: UInt64)
    /// Answers `WHO` for `connection` itself, keeping the connection's reply order (`ReplyOrder`).
    func who(_ subject: String, limit: Int, for connection: ClientConnection)
}
