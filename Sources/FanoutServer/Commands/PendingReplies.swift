import DequeModule
import FanoutEngine

/// One connection's replies in command order, while an engine that answers later (several nodes) has some
/// outstanding: a PUB's slot is filled when its receipt comes, and filled slots at the front are sent. A
/// command read meanwhile that must not overtake them waits (`deferred`), and the connection reads nothing
/// more until it has run. Made on a connection's first publish through such an engine (`ReplyOrder`); the
/// memory engine answers at once and never makes one.
final class PendingReplies: PublishReceipts {
    unowned let order: ReplyOrder
    weak var connection: ClientConnection?
    var slots = Deque<[UInt8]?>()
    /// The ticket of `slots.first`.
    var firstTicket: UInt64 = 0
    /// Command lines read while replies were pending, executed in order once they are sent. Bounded: the
    /// connection stops reading at the first, and only a caller that hands several lines without reading
    /// (an event stream's setup: one per subject) adds more.
    var deferred = Deque<[UInt8]>()
    /// A RESUME or LAST whose replay the engine has not answered, or a SUB waiting for its subscriptions.
    var replaying = false
    /// The deferred SUB has waited for its subscriptions: it runs now, whatever their state.
    var subscribeNow = false
    /// The client closed its side with replies still pending: the connection closes once they are sent.
    var closeWhenAnswered = false

    /// The last `+OK <receivers>` line made, shared by the replies that have the same count.
    private var lastAcknowledgement: (receivers: Int64, line: [UInt8]) = (-1, [])

    var isBusy: Bool { !slots.isEmpty || replaying }

    /// The ticket the next slot takes.
    var nextTicket: UInt64 { firstTicket + UInt64(slots.count) }

    init(order: ReplyOrder, connection: ClientConnection) {
        self.order = order
        self.connection = connection
    }

    /// `+OK <receivers>\n`.
    func acknowledgement(receivers: Int64) -> [UInt8] {
        if lastAcknowledgement.receivers != receivers {
            lastAcknowledgement = (receivers, Array("+OK \(receivers)\n".utf8))
        }
        return lastAcknowledgement.line
    }

    func published(ticket: UInt64, _ result: Result<Int64, EngineFailure>) {
        order.published(ticket: ticket, result, pending: self)
    }
}
