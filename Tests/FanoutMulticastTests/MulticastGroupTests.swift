import FanoutMulticast
import Testing

private final class Worker {
    var busy = false
}

@Suite("MulticastGroup")
struct MulticastGroupTests {
    @Test func picksInTurnAndOnce() {
        let group = MulticastGroup<Worker>()
        let workers = (0..<3).map { _ in Worker() }
        for worker in workers { #expect(group.add(worker)) }
        #expect(!group.add(workers[0]), "a member is in the group once")
        let picks = (0..<9).compactMap { _ in group.pick { $0.busy } }
        for worker in workers { #expect(picks.filter { $0 === worker }.count == 3) }
    }

    @Test func neverPicksTheExcludedOrTheDead() {
        let group = MulticastGroup<Worker>()
        let asker = Worker()
        group.add(asker)
        do {
            let dying = Worker()
            group.add(dying)
        }
        #expect(group.pick(excluding: asker) { $0.busy } == nil, "only the asker is alive")
        #expect(group.storedCount == 1, "the dead member went when it was met")
        let other = Worker()
        group.add(other)
        for _ in 0..<4 { #expect(group.pick(excluding: asker) { $0.busy } === other) }
    }

    @Test func aBusyMemberIsPickedOnlyWhenEveryOtherIs() {
        let group = MulticastGroup<Worker>()
        let workers = (0..<3).map { _ in Worker() }
        for worker in workers { group.add(worker) }
        workers[0].busy = true
        workers[1].busy = true
        for _ in 0..<6 { #expect(group.pick { $0.busy } === workers[2]) }
        workers[2].busy = true
        #expect(group.pick { $0.busy } != nil, "all busy: one of them still")
        workers[0].busy = false
        group.markReady(workers[0])
        for _ in 0..<3 { #expect(group.pick { $0.busy } === workers[0]) }
    }

    @Test func aMemberPassedOverIsNeverChosenForThatPick() {
        let group = MulticastGroup<Worker>()
        let workers = (0..<3).map { _ in Worker() }
        for worker in workers { group.add(worker) }
        let picks = (0..<6).compactMap { _ in group.pick(passingOver: { $0 === workers[0] }, load: { _ in .ready }) }
        #expect(picks.count == 6 && !picks.contains { $0 === workers[0] }, "the others take every pick")
        #expect(group.pick(passingOver: { _ in true }, load: { _ in .ready }) == nil, "nobody may take it")
        #expect(group.pick { _ in false } != nil, "passed over for one pick only")
    }

    /// A member that stays busy while the others come back from busy is stalled: while another member is busy
    /// but coming back, the stalled one is never chosen; when all are stalled, the one that came back last is.
    @Test func aStalledMemberIsChosenLast() {
        let group = MulticastGroup<Worker>()
        let stalled = Worker()
        let others = (0..<3).map { _ in Worker() }
        group.add(stalled)
        for worker in others { group.add(worker) }
        stalled.busy = true
        var picks: [Worker] = []
        for round in 0..<30 {
            // The others turn busy and come back in turn; at times all of them are busy at once.
            for (index, worker) in others.enumerated() { worker.busy = (round + index) % 3 != 0 || round % 5 == 4 }
            for worker in others where !worker.busy { group.markReady(worker) }
            if let picked = group.pick(isBusy: { $0.busy }) { picks.append(picked) }
        }
        let late = picks.dropFirst(6)
        let stalledPicks = late.filter { $0 === stalled }.count
        #expect(stalledPicks == 0, "stalled, it was chosen \(stalledPicks) times")
        // Every member stalled: the one that came back most recently is chosen, not the one that never did.
        for worker in others { worker.busy = true }
        for _ in 0..<8 { _ = group.pick { $0.busy } }
        group.markReady(others[1])
        _ = group.pick { $0.busy }
        for _ in 0..<8 { _ = group.pick { $0.busy } }
        #expect(group.pick { $0.busy } !== stalled)
    }

    /// The bound stated where `MulticastGroup` is declared: a pick costs a group of 100,000 what it costs a
    /// group of 2, counted in members looked at.
    @Test func aPickCostsAHugeGroupWhatItCostsASmallOne() {
        func probesPerPick(members count: Int, busyShare: Int) -> Double {
            let group = MulticastGroup<Worker>()
            let workers = (0..<count).map { index in
                let worker = Worker()
                worker.busy = busyShare > 0 && index % busyShare == 0
                return worker
            }
            for worker in workers { group.add(worker) }
            let picks = 200_000
            let before = group.probes
            for _ in 0..<picks { _ = group.pick { $0.busy } }
            return Double(group.probes - before) / Double(picks)
        }
        let small = probesPerPick(members: 2, busyShare: 0)
        let huge = probesPerPick(members: 100_000, busyShare: 0)
        #expect(huge <= small * 1.01 + 0.01, "\(huge) probes per pick with 100,000 members, \(small) with 2")
        // With a third of the members busy, each busy one is looked at once and set aside.
        let withBusy = probesPerPick(members: 100_000, busyShare: 3)
        #expect(withBusy < 1.2, "\(withBusy) probes per pick")
    }
}
