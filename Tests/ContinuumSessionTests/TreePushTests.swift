import ContinuumCore
import ContinuumSession
import ContinuumWire
import Foundation
import Testing

/// Tree push (PROTOCOL.md §7.8.17) in the session machine: a duplicate sent eagerly prunes the link, a pruned link
/// carries HAVE in place of records, and an announced record that does not arrive by another path is pulled and
/// the link grafted.
@Suite("Session machine: tree push")
struct TreePushTests {
    let now = ContinuousClock.now
    /// After the repair delay.
    var later: ContinuousClock.Instant { now + .seconds(1) }

    /// A live frame of `records` received, verified and stored with `newlyStored` of them new.
    private func receiveLive(
        _ machine: inout Machine,
        _ records: [TestRecord],
        newlyStored: Int,
        push: Bool = false
    ) -> [Machine.Action] {
        let message: WireMessage = push ? .push(records.map(\.bytes)) : .records(live: true, records.map(\.bytes))
        _ = machine.receive(message, now: now)
        let actions = machine.verified(records, delivery: push ? .push : .live, bytes: 32 * records.count)
        #expect(actions.contains { if case .store = $0 { true } else { false } })
        var clock = VectorClock()
        for record in records { clock.advance(record.ref.author, to: record.ref.sequence) }
        return machine.stored(StoreOutcome(stored: newlyStored, clock: clock))
    }

    @Test("a live frame of records held already prunes the link both ways; a new one does not")
    func duplicatePrunes() {
        var machine = Machine(peer: Fixture.peer)
        let fresh = receiveLive(&machine, [Fixture.record(1, 1)], newlyStored: 1)
        #expect(!fresh.contains(.sendUrgent([.tree(eager: false)])))
        #expect(machine.eager && machine.peerEager)

        let duplicate = receiveLive(&machine, [Fixture.record(1, 2)], newlyStored: 0)
        #expect(duplicate.contains(.sendUrgent([.tree(eager: false)])), "\(duplicate)")
        #expect(!machine.eager && !machine.peerEager)
        #expect(machine.currentStats.prunes == 1)

        // Once pruned, another duplicate sends nothing more.
        let again = receiveLive(&machine, [Fixture.record(1, 3)], newlyStored: 0)
        #expect(!again.contains(.sendUrgent([.tree(eager: false)])))
        #expect(machine.currentStats.prunes == 1)
    }

    @Test("a live copy of a record this session asked for (a gap, crossing the answer) does not prune")
    func askedForDoesNotPrune() {
        var machine = Machine(peer: Fixture.peer)
        // Record 3 comes live before 1 and 2 (the head stays at 0): the machine asks the peer for 1 ... 2.
        let third = Fixture.record(1, 3)
        _ = machine.receive(.records(live: true, [third.bytes]), now: now)
        _ = machine.verified([third], delivery: .live, bytes: 32)
        let gap = machine.stored(StoreOutcome(stored: 1, clock: VectorClock()))
        #expect(gap.contains(.send(.request([LogRange(author: Fixture.author(1), range: 1...2)]))), "\(gap)")
        // The answer brought them; then the peer's own live copy of record 2 arrives, held already.
        let late = receiveLive(&machine, [Fixture.record(1, 2)], newlyStored: 0)
        #expect(!late.contains(.sendUrgent([.tree(eager: false)])), "\(late)")
        #expect(machine.peerEager)
        // A copy of a record this session never asked for nor brought is another path: pruned.
        let other = receiveLive(&machine, [Fixture.record(1, 4)], newlyStored: 0)
        #expect(other.contains(.sendUrgent([.tree(eager: false)])), "\(other)")
    }

    @Test("a duplicate PUSH prunes too; a duplicate in a round's answer never does")
    func pushAndCatchUp() {
        var pushed = Machine(peer: Fixture.peer)
        #expect(
            receiveLive(&pushed, [Fixture.record(1, 1)], newlyStored: 0, push: true).contains(
                .sendUrgent([.tree(eager: false)])
            )
        )

        var machine = Machine(peer: Fixture.peer)
        let record = Fixture.record(1, 1)
        _ = machine.receive(.records(live: false, [record.bytes]), now: now)
        _ = machine.verified([record], delivery: .catchUp, bytes: 32)
        let flushed = machine.flushTimerFired(1)
        #expect(flushed.count == 1)
        let actions = machine.stored(StoreOutcome(stored: 0, clock: VectorClock([record.ref.author: 1])))
        #expect(!actions.contains(.sendUrgent([.tree(eager: false)])))
        #expect(machine.peerEager)
    }

    @Test("with tree push off (--max-peers 0) a duplicate prunes nothing, but the peer's prune is obeyed")
    func treePushOff() {
        var configuration = Machine.Configuration()
        configuration.treePush = false
        var machine = Machine(peer: Fixture.peer, configuration: configuration)
        let actions = receiveLive(&machine, [Fixture.record(1, 1)], newlyStored: 0)
        #expect(!actions.contains(.sendUrgent([.tree(eager: false)])))
        #expect(machine.eager)
        #expect(machine.receive(.tree(eager: false), now: now) == [])
        #expect(!machine.eager)
        let gossip = machine.gossip([Fixture.outgoing(Fixture.record(2, 1))], backlog: 0, highWater: 1 << 20)
        #expect(gossip == [.send(.have([LogRange(author: Fixture.author(2), range: 1...1)]))])
    }

    @Test("a pruned link carries HAVE: consecutive records as one range, nothing the peer holds, nothing marked sent")
    func lazyGossip() {
        var machine = Machine(peer: Fixture.peer)
        _ = machine.receive(.tree(eager: false), now: now)
        // The peer holds author 3's first record (it sent it).
        _ = machine.receive(.ack(VectorClock([Fixture.author(3): 1])), now: now)
        let records = [
            Fixture.record(1, 1), Fixture.record(1, 2), Fixture.record(1, 3), Fixture.record(2, 5),
            Fixture.record(3, 1),
            Fixture.record(3, 2),
        ]
        let actions = machine.gossip(records.map(Fixture.outgoing), backlog: 0, highWater: 1 << 20)
        #expect(
            actions == [
                .send(
                    .have([
                        LogRange(author: Fixture.author(1), range: 1...3),
                        LogRange(author: Fixture.author(2), range: 5...5),
                        LogRange(author: Fixture.author(3), range: 2...2),
                    ])
                )
            ]
        )
        #expect(machine.currentStats.announced == 5)
        #expect(machine.currentStats.recordsOut == 0)
        // Pushes on a lazy link are announced the same way.
        #expect(
            machine.push([Fixture.outgoing(Fixture.record(4, 1))]) == [
                .send(.have([LogRange(author: Fixture.author(4), range: 1...1)]))
            ]
        )
        // A graft makes the link eager again: the records go whole, once.
        _ = machine.receive(.tree(eager: true), now: now)
        let eager = machine.gossip(records.map(Fixture.outgoing), backlog: 0, highWater: 1 << 20)
        #expect(eager.count == 1)
        if case .send(.records(true, let batch))? = eager.first {
            #expect(batch.count == 5)
        } else {
            Issue.record("expected live RECORDS, got \(eager)")
        }
    }

    @Test("HAVE: what the peer holds is not sent to it; what is still missing after the delay is pulled, and grafted")
    func announcedThenRepaired() {
        var machine = Machine(peer: Fixture.peer)
        // This side pruned the link earlier.
        _ = receiveLive(&machine, [Fixture.record(9, 1)], newlyStored: 0)
        #expect(!machine.peerEager)

        #expect(
            machine.receive(.have([LogRange(author: Fixture.author(1), range: 1...4)]), now: now) == [
                .scheduleRepair(after: .milliseconds(200))
            ]
        )
        // A second HAVE before the timer does not start another.
        #expect(machine.receive(.have([LogRange(author: Fixture.author(2), range: 1...1)]), now: now) == [])
        // The peer holds them: gossip of author 1's records sends nothing.
        #expect(machine.gossip([Fixture.outgoing(Fixture.record(1, 2))], backlog: 0, highWater: 1 << 20) == [])

        // Meanwhile records 1 ... 2 of author 1 and author 2's record arrived by the tree.
        let clock = VectorClock([Fixture.author(1): 2, Fixture.author(2): 1])
        let actions = machine.repair(ourClock: clock, now: later)
        #expect(
            actions == [
                .sendUrgent([.tree(eager: true)]),
                .send(.request([LogRange(author: Fixture.author(1), range: 3...4)])),
            ]
        )
        #expect(machine.eager && machine.peerEager)
        #expect(machine.currentStats.grafts == 1)
        // Each record is asked for once per session.
        _ = machine.receive(.have([LogRange(author: Fixture.author(1), range: 1...4)]), now: now)
        #expect(machine.repair(ourClock: clock, now: later) == [])
    }

    @Test("a record announced just before the timer waits its own delay; the peer's prune lets this side graft")
    func youngAnnouncementWaits() {
        var machine = Machine(peer: Fixture.peer)
        // The peer pruned the link: this side now announces, expects announcements, and grafts when one is late.
        _ = machine.receive(.tree(eager: false), now: now)
        #expect(!machine.eager && !machine.peerEager)
        _ = machine.receive(.have([LogRange(author: Fixture.author(1), range: 1...1)]), now: now)
        _ = machine.receive(
            .have([LogRange(author: Fixture.author(2), range: 1...1)]),
            now: now + .milliseconds(150)
        )
        // At 200 ms: author 1's record is pulled (and the link grafted); author 2's waits 150 ms more.
        let first = machine.repair(ourClock: VectorClock(), now: now + .milliseconds(200))
        #expect(
            first == [
                .scheduleRepair(after: .milliseconds(150)),
                .sendUrgent([.tree(eager: true)]),
                .send(.request([LogRange(author: Fixture.author(1), range: 1...1)])),
            ],
            "\(first)"
        )
        let second = machine.repair(ourClock: VectorClock(), now: now + .milliseconds(350))
        #expect(second == [.send(.request([LogRange(author: Fixture.author(2), range: 1...1)]))], "\(second)")
    }

    @Test("HAVE of records that arrived meanwhile: nothing is pulled and the link stays as it is")
    func nothingMissing() {
        var machine = Machine(peer: Fixture.peer)
        _ = machine.receive(.have([LogRange(author: Fixture.author(1), range: 1...2)]), now: now)
        #expect(machine.repair(ourClock: VectorClock([Fixture.author(1): 2]), now: later) == [])
        #expect(machine.currentStats.grafts == 0)
    }

    @Test("HAVE naming more authors than the bound: the rest are ignored, the state stays bounded")
    func boundedAnnouncements() {
        var configuration = Machine.Configuration()
        configuration.maxAnnouncedAuthors = 3
        var machine = Machine(peer: Fixture.peer, configuration: configuration)
        let ranges = (1...10).map { LogRange(author: Fixture.author($0), range: 1...1) }
        _ = machine.receive(.have(ranges), now: now)
        let actions = machine.repair(ourClock: VectorClock(), now: later)
        guard case .send(.request(let asked))? = actions.last else {
            Issue.record("expected a REQUEST, got \(actions)")
            return
        }
        #expect(asked.count == 3)
    }
}
