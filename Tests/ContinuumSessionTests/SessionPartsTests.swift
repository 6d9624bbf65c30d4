import ContinuumCore
import ContinuumSession
import ContinuumWire
import Foundation
import Testing

/// The parts of the session rules that live only for a while: the peer's round from its OFFER to its DONE, the
/// peer's announcements (HAVE) until they are repaired, and the interest advertised to the peer. The expected
/// actions are written out by hand.
@Suite("Session machine: a round's progress, announcements, interest")
struct SessionPartsTests {
    private let now = ContinuousClock.now
    private static let author = Fixture.author(3)

    private static func record(_ sequence: UInt64) -> TestRecord { Fixture.record(3, sequence) }

    /// The ACK of a batch after which this node holds author 3's records up to `head`.
    private static func ack(_ head: UInt64) -> Machine.Action { .send(.ack(VectorClock([author: head]))) }

    /// A frame of `records` received, verified and stored (each stored at once: `flushRecords` is 1).
    private func frame(_ machine: inout Machine, live: Bool, _ records: [TestRecord]) -> [Machine.Action] {
        let bytes = records.map(\.bytes)
        let delivery: Delivery = live ? .live : .catchUp
        #expect(machine.receive(.records(live: live, bytes), now: now) == [.verify(bytes, delivery)])
        let batch = StoreBatch(parts: [.init(delivery: delivery, records: records)])
        #expect(machine.verified(records, delivery: delivery, bytes: 32 * records.count) == [.store(batch)])
        let head = records.map(\.ref.sequence).max() ?? 0
        return machine.stored(StoreOutcome(stored: records.count, clock: VectorClock([Self.author: head])))
    }

    @Test("the peer's round: progress counts its catch-up frames against its OFFER, ends at DONE, starts again")
    func roundProgress() {
        var configuration = Machine.Configuration()
        configuration.flushRecords = 1
        var machine = Machine(peer: Fixture.peer, configuration: configuration)
        #expect(machine.receive(.offer(round: 1, records: 5, bytes: 500), now: now) == [])
        #expect(machine.receivingRound)
        #expect(
            frame(&machine, live: false, [Self.record(1), Self.record(2)]) == [
                Self.ack(2), .progress(records: 2, ofRecords: 5, bytes: 64, ofBytes: 500), .storedFromPeer(2),
            ]
        )
        // A live frame during the round is not part of it.
        #expect(
            frame(&machine, live: true, [Self.record(3)]) == [
                Self.ack(3), .progress(records: 2, ofRecords: 5, bytes: 64, ofBytes: 500), .storedFromPeer(1),
            ]
        )
        #expect(machine.receive(.done(round: 1), now: now) == [.roundFinished(1), .checkGaps])
        #expect(!machine.receivingRound)
        #expect(frame(&machine, live: false, [Self.record(4)]) == [Self.ack(4), .storedFromPeer(1)])
        // The next round counts from nothing.
        #expect(machine.receive(.offer(round: 2, records: 1, bytes: 32), now: now) == [])
        #expect(
            frame(&machine, live: false, [Self.record(5)]) == [
                Self.ack(5), .progress(records: 1, ofRecords: 1, bytes: 32, ofBytes: 32), .storedFromPeer(1),
            ]
        )
    }

    @Test("a record announced again keeps the time of its first announcement: the repair does not wait anew")
    func announcedAgain() {
        var machine = Machine(peer: Fixture.peer)
        let first = LogRange(author: Self.author, range: 1...1)
        #expect(machine.receive(.have([first]), now: now) == [.scheduleRepair(after: .milliseconds(200))])
        let more = LogRange(author: Self.author, range: 1...2)
        #expect(machine.receive(.have([more]), now: now + .milliseconds(150)) == [])
        #expect(
            machine.repair(ourClock: VectorClock(), now: now + .milliseconds(200)) == [
                .send(.request([LogRange(author: Self.author, range: 1...2)]))
            ]
        )
    }

    @Test("an advertisement that changes nothing sends nothing, but an older one after it is still dropped")
    func unchangedInterestMovesTheVersion() {
        var machine = Machine(peer: Fixture.peer)
        let one = Fixture.post(1)
        #expect(
            machine.advertise([one: 0], version: 1) == [
                .sendUrgent([.interest(replace: true, [PostInterest(post: one, hops: 0)])])
            ]
        )
        #expect(machine.advertise([one: 0], version: 3) == [])
        #expect(machine.advertise([:], version: 2) == [], "computed before version 3")
        #expect(
            machine.advertise([:], version: 4) == [
                .sendUrgent([.interest(replace: false, [PostInterest(post: one, hops: nil)])])
            ]
        )
    }
}
