@testable import FanoutMulticast
import Testing

private final class Listener {
    let name: String
    var heard: [String] = []
    init(_ name: String) { self.name = name }
}

@Suite("MulticastDelegate")
struct MulticastDelegateTests {
    @Test func notifiesEveryMemberOnce() {
        let set = MulticastDelegate<Listener>()
        let a = Listener("a"), b = Listener("b")
        set.add(a)
        set.add(b)
        set.notify { $0.heard.append("hello") }
        #expect(a.heard == ["hello"])
        #expect(b.heard == ["hello"])
    }

    @Test func deduplicatesMembers() {
        let set = MulticastDelegate<Listener>()
        let a = Listener("a")
        let first = set.add(a)
        let second = set.add(a)
        #expect(first == second)
        #expect(set.liveCount == 1)
        set.notify { $0.heard.append("x") }
        #expect(a.heard == ["x"])
    }

    @Test func deadMembersVanishWithoutRemoval() {
        let set = MulticastDelegate<Listener>()
        let keeper = Listener("keeper")
        set.add(keeper)
        weak var weakGone: Listener?
        do {
            let gone = Listener("gone")
            weakGone = gone
            set.add(gone)
            #expect(set.liveCount == 2)
        }
        #expect(weakGone == nil, "the set must not keep a member alive")
        var notified: [String] = []
        set.notify { notified.append($0.name) }
        #expect(notified == ["keeper"])
        #expect(set.liveCount == 1)
        #expect(set.liveMembers.map(\.name) == ["keeper"])
    }

    @Test func pruneDropsDeadEntries() {
        let set = MulticastDelegate<Listener>()
        var members: [Listener] = (0..<10).map { Listener("\($0)") }
        members.forEach { set.add($0) }
        members.removeLast(4)
        #expect(set.storedCount == 10)
        #expect(set.prune() == 4)
        #expect(set.storedCount == 6)
        #expect(!set.isEmpty)
        members.removeAll()
        #expect(set.isEmpty)
    }

    @Test func hasLiveMemberPrunesOnlyTheDeadItPasses() {
        let set = MulticastDelegate<Listener>()
        #expect(!set.hasLiveMember)
        let keeper = Listener("keeper")
        set.add(keeper)
        var dying: [Listener] = (0..<5).map { Listener("\($0)") }
        dying.forEach { set.add($0) }
        dying.removeAll()
        #expect(set.hasLiveMember)
        #expect(set.storedCount == 1, "the dead added after the keeper were passed and pruned")
        #expect(set.contains(keeper))
        set.remove(keeper)
        #expect(!set.hasLiveMember)
    }

    @Test func removesByMemberAndByToken() {
        let set = MulticastDelegate<Listener>()
        let a = Listener("a"), b = Listener("b")
        let tokenA = set.add(a)
        set.add(b)
        #expect(set.remove(tokenA))
        #expect(!set.remove(tokenA), "a token removes once")
        #expect(!set.contains(a))
        #expect(set.remove(b))
        #expect(!set.remove(b))
        #expect(set.isEmpty)
    }

    /// Removal by token is part of the pattern, but a large set whose owner never uses it (the server's subject
    /// sets) keeps no index by token; the first removal by token builds one, and removals by token stay right.
    @Test func aLargeSetPaysForTokensOnlyOnceTheyAreUsed() {
        let set = MulticastDelegate<Listener>()
        let members = (0..<100).map { Listener("m\($0)") }
        let tokens = members.map { set.add($0) }
        #expect(!set.keepsTokenIndex, "no index by token until a removal by token")
        #expect(set.remove(members[0]))
        #expect(!set.keepsTokenIndex)
        #expect(set.remove(tokens[50]))
        #expect(set.keepsTokenIndex)
        #expect(!set.contains(members[50]))
        #expect(!set.remove(tokens[0]), "a member removed by reference is gone by token too")
        let late = Listener("late")
        let lateToken = set.add(late)
        #expect(set.remove(lateToken), "a member added after the index was built is found by token")
        #expect(set.liveCount == 98)
    }

    @Test func membersMayMutateTheSetWhileBeingNotified() {
        let set = MulticastDelegate<Listener>()
        let a = Listener("a"), b = Listener("b"), late = Listener("late")
        set.add(a)
        set.add(b)
        var calls = 0
        set.notify { member in
            calls += 1
            // Remove everyone and add a newcomer mid-notification: the running notification keeps its snapshot.
            set.remove(a)
            set.remove(b)
            set.add(late)
            member.heard.append("first")
        }
        #expect(calls == 2)
        #expect(a.heard == ["first"] && b.heard == ["first"])
        #expect(late.heard.isEmpty, "a member added during a notification joins from the next one")
        set.notify { $0.heard.append("second") }
        #expect(late.heard == ["second"])
        #expect(a.heard == ["first"])
    }

    /// One member is stored without an array; a second moves both into one; the set empties back.
    @Test func growsFromOneMemberAndShrinksBack() {
        let set = MulticastDelegate<Listener>()
        let a = Listener("a"), b = Listener("b"), c = Listener("c")
        let tokenA = set.add(a)
        #expect(set.add(a) == tokenA)
        #expect(set.storedCount == 1 && set.contains(a) && !set.contains(b))
        set.add(b)
        var names: [String] = []
        set.notify { names.append($0.name) }
        #expect(names.sorted() == ["a", "b"])
        #expect(set.remove(a) && !set.contains(a) && set.contains(b))
        #expect(set.remove(b) && set.isEmpty)
        let tokenC = set.add(c)
        #expect(set.liveMembers.map(\.name) == ["c"])
        #expect(!set.remove(tokenA), "a token of a membership that ended removes nothing")
        #expect(set.remove(tokenC) && set.isEmpty)
    }

    @Test func tokensAreNeverHandedOutTwice() {
        let set = MulticastDelegate<Listener>()
        let a = Listener("a"), b = Listener("b")
        let first = set.add(a)
        set.remove(first)
        let second = set.add(b)
        #expect(first != second)
        #expect(!set.remove(first), "a stale token does not remove the member that came after it")
        #expect(set.contains(b))
    }

    /// Past `indexThreshold` members the set keeps hash indexes; dedupe and removal by member or token must
    /// work the same on both sides of it, and as it fills up and empties again.
    @Test func largeSetsKeepTheSameContract() {
        let set = MulticastDelegate<Listener>()
        let members = (0..<(3 * MulticastDelegate<Listener>.indexThreshold)).map { Listener("\($0)") }
        var tokens = members.map { set.add($0) }
        #expect(members.map { set.add($0) } == tokens, "adding again returns the same token")
        #expect(set.liveCount == members.count)
        for (index, member) in members.enumerated() where index % 3 == 0 { #expect(set.remove(member)) }
        for index in members.indices where index % 3 == 1 { #expect(set.remove(tokens[index])) }
        for index in members.indices where index % 3 != 2 {
            #expect(!set.contains(members[index]))
            #expect(!set.remove(tokens[index]))
        }
        var heard = 0
        set.notify { _ in heard += 1 }
        #expect(heard == members.count / 3)
        for index in members.indices where index % 3 != 2 { tokens[index] = set.add(members[index]) }
        #expect(set.liveCount == members.count)
        for (index, member) in members.enumerated() { #expect(set.contains(member) && set.remove(tokens[index])) }
        #expect(set.isEmpty && set.storedCount == 0)
    }

    @Test func deadMembersOfALargeSetArePruned() {
        let set = MulticastDelegate<Listener>()
        let keepers = (0..<20).map { Listener("keeper\($0)") }
        keepers.forEach { set.add($0) }
        do {
            let transient = (0..<20).map { Listener("gone\($0)") }
            transient.forEach { set.add($0) }
            #expect(set.storedCount == 40)
        }
        #expect(set.prune() == 20)
        #expect(set.liveMembers.count == 20)
        #expect(keepers.allSatisfy { set.contains($0) })
    }

    @Test func aMemberDyingDuringNotificationIsSkipped() {
        let set = MulticastDelegate<Listener>()
        var holder: [Listener] = [Listener("a"), Listener("b")]
        holder.forEach { set.add($0) }
        var names: [String] = []
        set.notify { member in
            names.append(member.name)
            holder.removeAll()
        }
        // Whichever member came first was notified; the other died before its turn and was skipped.
        #expect(names.count == 1)
        #expect(set.isEmpty)
    }
}

@Suite("LockedMulticastDelegate")
struct LockedMulticastDelegateTests {
    final class Counter: Sendable {
        let set: LockedMulticastDelegate<Counter>
        init(set: LockedMulticastDelegate<Counter>) { self.set = set }
    }

    @Test func notifiesOutsideTheLock() {
        let set = LockedMulticastDelegate<Counter>()
        let member = Counter(set: set)
        set.add(member)
        var reentered = false
        set.notify { member in
            // Re-entering the set from a callback would deadlock if the lock were held.
            member.set.add(Counter(set: set))
            reentered = member.set.liveCount >= 1
        }
        #expect(reentered)
    }

    @Test func sharedAcrossTasks() async {
        let set = LockedMulticastDelegate<Counter>()
        let members = (0..<64).map { _ in Counter(set: set) }
        await withTaskGroup(of: Void.self) { group in
            for member in members {
                group.addTask {
                    set.add(member)
                    set.notify { _ in }
                }
            }
        }
        #expect(set.liveCount == 64)
        var seen = 0
        set.notify { _ in seen += 1 }
        #expect(seen == 64)
    }
}
