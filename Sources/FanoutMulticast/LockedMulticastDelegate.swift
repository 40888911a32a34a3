import Synchronization

/// A `MulticastDelegate` that several threads may share.
///
/// Membership changes take a lock; a notification takes it only long enough to resolve the live members,
/// then calls them with the lock released, so a member may add, remove or notify from inside the callback
/// without deadlocking, and a slow member never blocks the others' registration.
public final class LockedMulticastDelegate<Member: AnyObject & Sendable>: Sendable {
    private let storage: Mutex<UncheckedBox>

    /// `MulticastDelegate` is not Sendable; the mutex is what makes touching it from many threads safe.
    private struct UncheckedBox: @unchecked Sendable {
        let set = MulticastDelegate<Member>()
    }

    public init() {
        storage = Mutex(UncheckedBox())
    }

    @discardableResult
    public func add(_ member: Member) -> MembershipToken {
        storage.withLock { $0.set.add(member) }
    }

    @discardableResult
    public func remove(_ member: Member) -> Bool {
        storage.withLock { $0.set.remove(member) }
    }

    @discardableResult
    public func remove(_ token: MembershipToken) -> Bool {
        storage.withLock { $0.set.remove(token) }
    }

    public var liveCount: Int {
        storage.withLock { $0.set.liveCount }
    }

    /// Calls `body` for each member live at the time of the call, outside the lock.
    public func notify(_ body: (Member) throws -> Void) rethrows {
        let members = storage.withLock { $0.set.liveMembers }
        for member in members {
            try body(member)
        }
    }
}
