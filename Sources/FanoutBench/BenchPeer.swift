@_spi(Bench) import FanoutClient
import FanoutEventLoop

/// One load-generator connection, whatever protocol it speaks. Runs on the benchmark's loop thread.
public protocol BenchPeer: AnyObject {
    /// Connects; `done` gets nil when ready, or why not.
    func connect(_ done: @escaping (String?) -> Void)
    /// Subscribes to one subject; `done` gets nil once the server confirmed it.
    func subscribe(_ subject: String, _ done: @escaping (String?) -> Void)
    /// Stops reading from the socket for good: a stalled subscriber, for slow-consumer scenarios.
    func stall()
    var onFailure: ((String) -> Void)? { get set }
    /// The protocol this peer speaks.
    var wireFormat: WireFormat { get }
    /// Gives up the connection, once set up (greeted, subscribed), to a `DeliverySink` or a `PublishPump`:
    /// its fd and the bytes read past the last reply. Nil when not connected.
    func releaseConnection() -> (fd: Int32, unread: [UInt8])?
    func close()
}

/// A peer speaking the Fanout protocol through the client library, until it hands its connection over.
public final class FanoutPeer: BenchPeer {
    private let client: FanoutClient
    /// The group that `subscribe` joins with `QSUB` (protocol 1.2), or nil for `SUB`.
    private let group: String?

    public init(loop: EventLoop, address: SocketAddress, timeout: Duration, token: String?, group: String? = nil) {
        self.group = group
        client = FanoutClient(loop: loop, address: address, options: ClientOptions(timeout: timeout, reconnect: .never, token: token))
    }

    public var onFailure: ((String) -> Void)?

    public func connect(_ done: @escaping (String?) -> Void) {
        client.onEvent = { [weak self] event in
            switch event {
            case .disconnected(let reason): self?.onFailure?("connection lost: \(reason)")
            case .serverClosing(let error): self?.onFailure?("server closed the connection: \(error.code) \(error.text)")
            default: break
            }
        }
        client.connect { result in
            switch result {
            case .success: done(nil)
            case .failure(let error): done(error.description)
            }
        }
    }

    public func subscribe(_ subject: String, _ done: @escaping (String?) -> Void) {
        if let group {
            client.request("QSUB \(group) \(subject)") { result in
                switch result {
                case .success: done(nil)
                case .failure(let error): done(error.description)
                }
            }
            return
        }
        client.subscribe([subject], completion: { result in
            switch result {
            case .success: done(nil)
            case .failure(let error): done(error.description)
            }
        })
    }

    public func stall() { client.stopReading() }

    public var wireFormat: WireFormat { .fanout }

    public func releaseConnection() -> (fd: Int32, unread: [UInt8])? {
        client.onEvent = nil
        return client.releaseConnection()
    }

    public func close() { client.close() }
}
