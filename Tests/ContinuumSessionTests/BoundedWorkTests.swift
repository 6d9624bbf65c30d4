import ContinuumCore
import ContinuumSession
import ContinuumWire
import Foundation
import Testing

/// Bounded work (PROTOCOL.md §7.8.15): records held already are charged for their lookup, records verified for
/// nothing for their verification, a big CLOCK before anything is done for it, and data never asked for is refused.
@Suite("Session machine: bounded work per peer")
struct BoundedWorkTests {
    private let start = ContinuousClock.now

    /// `count` records of author 1 from sequence `from`: the bytes of a frame, and their refs (as held).
    private static func records(_ count: Int, from first: UInt64 = 1) -> [TestRecord] {
        (0..<UInt64(count)).map { Fixture.record(1, first + $0) }
    }

    /// A clock of `count` authors, each at 1.
    private static func clock(_ count: Int) -> VectorClock {
        VectorClock(Dictionary(uniqueKeysWithValues: (0..<count).map { (Fixture.author($0), UInt64(1)) }))
    }

    /// A machine whose last clock sent to the peer covers author 1's records 1 to 1,000.
    private static func knowing(_ configuration: Machine.Configuration = Machine.Configuration()) -> Machine {
        Machine(peer: Fixture.peer, configuration: configuration, lastSent: VectorClock([Fixture.author(1): 1000]))
    }

    @Test("1,000 records it knows are held, a frame: each costs 11 + 500 units, and the 22nd is refused at its lookup")
    func heldRecordsThenMoreAreRefused() throws {
        var machine = Self.knowing()
        let held = Self.records(1000)
        // The budget holds 10,000 units and 1,000 of debt, and no time passes: 21 frames cost 10,731 units.
        for frame in 1...21 {
            #expect(
                machine.receive(.records(live: false, held.map(\.bytes)), now: start)
                    == [.verify(held.map(\.bytes), .catchUp)]
            )
            let actions = machine.verified([], delivery: .catchUp, bytes: 32_000, held: held.map(\.ref))
            #expect(actions == [.scheduleFlush(generation: frame)], "frame \(frame): \(actions)")
        }
        // The 22nd is taken (11 units: 10,742), but its 1,000 held records (500 units) go over.
        #expect(
            machine.receive(.records(live: false, held.map(\.bytes)), now: start)
                == [.verify(held.map(\.bytes), .catchUp)]
        )
        let refused = machine.verified([], delivery: .catchUp, bytes: 32_000, held: held.map(\.ref))
        #expect(
            refused == [
                .close(
                    WireError(
                        .overBudget,
                        "the peer sent more work than its budget allows (2000 units/s, 10000 at once, 1000 of debt); "
                            + "last: 1000 records held already, 500 units"
                    )
                )
            ]
        )
        #expect(machine.phase == .closed)
    }

    @Test("a peer that keeps sending held records as fast as the node drops them is refused within 2 s")
    func heldFloodRefusedInTime() {
        var machine = Self.knowing()
        let held = Self.records(1000)
        var now = start
        var refusal: [Machine.Action] = []
        // Dropping a frame of 1,000 held records takes the node about 20 ms (decoded, looked up, compared).
        for _ in 0..<1000 {
            now += .milliseconds(20)
            let asked = machine.receive(.push(held.map(\.bytes)), now: now)
            if asked.first?.closeCode != nil {
                refusal = asked
                break
            }
            let actions = machine.verified([], delivery: .push, bytes: 32_000, held: held.map(\.ref))
            if actions.first?.closeCode != nil {
                refusal = actions
                break
            }
        }
        #expect(refusal.first?.closeCode == .overBudget, "\(refusal)")
        #expect(now - start < .seconds(2), "refused after \(now - start)")
    }

    @Test("held records the peer could not know of cost 0.05 units each, the first time; sent again, 0.5")
    func crossingThenKnown() {
        var configuration = Machine.Configuration()
        configuration.budget = PeerBudget.Limits(rate: 0, burst: 571, maxDebt: 0)
        // No clock sent to the peer yet: it cannot know what this node holds (another peer brought it).
        var machine = Machine(peer: Fixture.peer, configuration: configuration)
        let held = Self.records(1000)
        // 11 + 50 units: 510 left.
        _ = machine.receive(.push(held.map(\.bytes)), now: start)
        #expect(
            machine.verified([], delivery: .push, bytes: 32_000, held: held.map(\.ref)) == [
                .store(
                    StoreBatch(parts: [.init(delivery: .push, records: [], held: held.map(\.ref))])
                )
            ]
        )
        _ = machine.stored(StoreOutcome(stored: 0, clock: VectorClock([Fixture.author(1): 1000])))
        // Again: 11, then 500 would leave -1.
        _ = machine.receive(.push(held.map(\.bytes)), now: start)
        let again = machine.verified([], delivery: .push, bytes: 32_000, held: held.map(\.ref))
        #expect(again.first?.closeCode == .overBudget, "\(again)")
    }

    @Test("a live frame of held records alone is acknowledged, and counts as a duplicate (tree push prunes)")
    func heldLiveFrameIsAcknowledged() {
        var machine = Machine(peer: Fixture.peer)
        let held = Self.records(3)
        _ = machine.receive(.records(live: true, held.map(\.bytes)), now: start)
        let batch = StoreBatch<TestRecord>(parts: [.init(delivery: .live, records: [], held: held.map(\.ref))])
        #expect(machine.verified([], delivery: .live, bytes: 96, held: held.map(\.ref)) == [.store(batch)])
        let clock = VectorClock([Fixture.author(1): 3])
        let stored = machine.stored(StoreOutcome(stored: 0, clock: clock, duplicatesOnly: true))
        #expect(stored == [.send(.ack(clock)), .sendUrgent([.tree(eager: false)])])
        // The peer holds what it sent: its clock covers the three.
        #expect(machine.peerClock == clock)
    }

    @Test("records verified for nothing cost 5 units each: a second frame of 1,000 is refused at its store")
    func wastedVerificationIsCharged() {
        var configuration = Machine.Configuration()
        configuration.budget = PeerBudget.Limits(rate: 0, burst: 6_000, maxDebt: 0)
        var machine = Machine(peer: Fixture.peer, configuration: configuration)
        let records = Self.records(1000)
        let clock = VectorClock([Fixture.author(1): 1000])
        // First frame: 11 units, then 5,000 for its 1,000 records verified and not stored (0 new): 5,011.
        _ = machine.receive(.records(live: true, records.map(\.bytes)), now: start)
        _ = machine.verified(records, delivery: .live, bytes: 32_000)
        let first = machine.stored(StoreOutcome(stored: 0, clock: clock, wasted: 1000))
        #expect(first.first == .send(.ack(clock)))
        // Second: 11 more (5,022), and 5,000 would go past 6,000.
        _ = machine.receive(.records(live: true, records.map(\.bytes)), now: start)
        _ = machine.verified(records, delivery: .live, bytes: 32_000)
        let second = machine.stored(StoreOutcome(stored: 0, clock: clock, wasted: 1000))
        #expect(second.count == 1)
        #expect(second.first?.closeCode == .overBudget)
        guard case .close(let error) = second.first else {
            Issue.record("not refused: \(second)")
            return
        }
        #expect(error.message.hasSuffix("last: 1000 records verified for nothing, 5000 units"), "\(error.message)")
    }

    @Test("a CLOCK of 100,000 entries is charged 9,700 units before anything is done or sent for it")
    func bigClockChargedFirst() {
        let big = Self.clock(100_000)
        let opening = VectorClock([Fixture.author(0): 1])
        #expect(abs(PeerBudget.cost(of: .clock(round: 1, big)) - 9_700) < 0.001)

        // The session's first clock is its opening (200 units whatever its size); the big one comes second.
        var configuration = Machine.Configuration()
        configuration.budget = PeerBudget.Limits(rate: 0, burst: 9_899, maxDebt: 0)
        var refusing = Machine(peer: Fixture.peer, configuration: configuration)
        _ = refusing.receive(.clock(round: 1, opening), now: start)
        let refused = refusing.receive(.clock(round: 2, big), now: start)
        #expect(refused.count == 1)
        #expect(refused.first?.closeCode == .overBudget)
        // Nothing of it was merged, remembered or queued.
        #expect(refusing.peerClock == opening)

        configuration.budget = PeerBudget.Limits(rate: 0, burst: 9_900, maxDebt: 0)
        var taking = Machine(peer: Fixture.peer, configuration: configuration)
        _ = taking.receive(.clock(round: 1, opening), now: start)
        #expect(
            taking.receive(.clock(round: 2, big), now: start) == [
                .rememberClock(sent: nil, received: big), .peerClockKnown(moved: true),
            ]
        )
    }

    @Test("the opening clock costs 200 units whatever its size; the next costs its entries")
    func openingClock() {
        var budget = PeerBudget(limits: PeerBudget.Limits(rate: 0, burst: 9_900, maxDebt: 0))
        #expect(budget.charge(.clock(round: 1, Self.clock(100_000)), now: start) == nil)
        #expect(budget.tokens == 9_700)
        #expect(
            budget.charge(
                .clockSince(round: 2, base: WireCodec.clockDigest(VectorClock()), Self.clock(100_000)),
                now: start
            ) == nil
        )
        #expect(budget.tokens < 0.001)
    }

    @Test("PHOTO_DATA of a photo never asked for is refused with ERROR, and the session ends")
    func unsolicitedPhotoData() {
        var machine = Machine(peer: Fixture.peer)
        let hash = Fixture.hash(5)
        let actions = machine.receive(.photoData(hash, offset: 0, chunk: [1, 2, 3]), now: start)
        #expect(
            actions == [
                .close(
                    WireError(
                        .unexpectedMessage,
                        "PHOTO_DATA for a photo this node did not ask the peer for (030000000000)"
                    )
                )
            ]
        )
        #expect(machine.phase == .closed)
    }

    @Test("PHOTO_DATA is taken while asked for, until the peer ends each request; then refused")
    func askedPhotoData() {
        var machine = Machine(peer: Fixture.peer)
        let hash = Fixture.hash(5)
        let chunk: [UInt8] = [9, 9]
        #expect(machine.askForPhoto(hash, from: 0) == [.send(.photoWant(hash, offset: 0))])
        #expect(machine.askForPhoto(hash, from: 100) == [.send(.photoWant(hash, offset: 100))])
        #expect(
            machine.receive(.photoData(hash, offset: 0, chunk: chunk), now: start) == [
                .photo(.data(hash, offset: 0, chunk: chunk))
            ]
        )
        #expect(machine.receive(.photoEnd(hash, totalBytes: 2), now: start) == [.photo(.end(hash, totalBytes: 2))])
        // The second request is still open.
        #expect(
            machine.receive(.photoData(hash, offset: 100, chunk: chunk), now: start) == [
                .photo(.data(hash, offset: 100, chunk: chunk))
            ]
        )
        #expect(machine.receive(.photoMissing(hash), now: start) == [.photo(.missing(hash))])
        // Both answered: more is refused.
        #expect(
            machine.receive(.photoData(hash, offset: 2, chunk: chunk), now: start).first?.closeCode
                == .unexpectedMessage
        )
    }

    @Test("THUMB_DATA is taken once per THUMB_WANT; another is refused")
    func askedThumbnail() {
        var machine = Machine(peer: Fixture.peer)
        let hash = Fixture.hash(6)
        #expect(machine.askForThumbnail(hash) == [.send(.thumbWant(hash))])
        #expect(
            machine.receive(.thumbData(hash, [0xFF, 0xD8]), now: start) == [.photo(.thumbnail(hash, [0xFF, 0xD8]))]
        )
        #expect(machine.receive(.thumbData(hash, [0xFF, 0xD8]), now: start).first?.closeCode == .unexpectedMessage)
    }

    @Test("PHOTOS is taken for photos asked with PHOTOS_WANT, each once; one entry not asked refuses the whole")
    func askedPhotos() {
        var machine = Machine(peer: Fixture.peer)
        let (one, two, three) = (Fixture.hash(7), Fixture.hash(8), Fixture.hash(9))
        #expect(machine.askForPhotos([one, two]) == [.send(.photosWant([one, two]))])
        let first = [SmallPhoto(hash: one, bytes: [1, 2])]
        #expect(machine.receive(.photos(first), now: start) == [.photo(.photos(first))])
        // Answered already: `one` again is refused, as is `three` (never asked), even beside `two`.
        for stray in [one, three] {
            var copy = machine
            let actions = copy.receive(
                .photos([SmallPhoto(hash: two, bytes: nil), SmallPhoto(hash: stray, bytes: [3])]),
                now: start
            )
            #expect(actions.first?.closeCode == .unexpectedMessage)
        }
        let rest = [SmallPhoto(hash: two, bytes: nil)]
        #expect(machine.receive(.photos(rest), now: start) == [.photo(.photos(rest))])
    }

    @Test("PHOTOS_WANT costs a quarter unit a photo asked for; PHOTOS what its bytes do, as PHOTO_DATA")
    func photosCharged() {
        #expect(PeerBudget.cost(of: .photosWant((0..<64).map { Fixture.hash($0) })) == 18)
        let half = SmallPhoto(hash: Fixture.hash(1), bytes: [UInt8](repeating: 0, count: 524_288))
        #expect(PeerBudget.cost(of: .photos([half, SmallPhoto(hash: Fixture.hash(2), bytes: nil)])) == 0.6)
    }

    @Test("asked-for photo data is charged by its bytes: a tenth of a unit and one a MiB")
    func photoDataChargedByBytes() {
        let hash = Fixture.hash(1)
        #expect(PeerBudget.cost(of: .photoData(hash, offset: 0, chunk: [UInt8](repeating: 0, count: 262_144))) == 0.35)
        #expect(
            PeerBudget.cost(of: .photoData(hash, offset: 0, chunk: [UInt8](repeating: 0, count: 1_048_576))) == 1.1
        )
        // A peer serving asked-for chunks at loopback speed, 4,000 of 256 KiB a second, costs 1,400 units a second:
        // within the refill of 2,000, so a fast honest sender is never refused.
        let perSecond =
            4_000 * PeerBudget.cost(of: .photoData(hash, offset: 0, chunk: [UInt8](repeating: 0, count: 262_144)))
        #expect(abs(perSecond - 1_400) < 0.001)
        #expect(perSecond < PeerBudget.Limits().rate)
    }

    @Test("copies that raced another session's (two peers answering one round) cost the crossing rate, not 5 units")
    func racedCopiesCostLittle() {
        var configuration = Machine.Configuration()
        configuration.budget = PeerBudget.Limits(rate: 0, burst: 6_000, maxDebt: 0)
        var machine = Machine(peer: Fixture.peer, configuration: configuration)
        let records = Self.records(1000)
        let clock = VectorClock([Fixture.author(1): 1000])
        // Three frames of 1,000 whose records another session stored first: each 11 units on receipt and 50 (1,000
        // at 0.05) at its store, 183 in all; as wasted records they would have cost 15,033 and been refused.
        for _ in 0..<3 {
            _ = machine.receive(.records(live: true, records.map(\.bytes)), now: start)
            _ = machine.verified(records, delivery: .live, bytes: 32_000)
            let actions = machine.stored(StoreOutcome(stored: 0, clock: clock, raced: 1000))
            #expect(actions.first == .send(.ack(clock)), "\(actions)")
        }
        // 5,817 left: a fourth frame wholly out of scope (11 + 5,000 units) still fits, which it would not had the
        // three raced frames been charged as wasted.
        _ = machine.receive(.records(live: true, records.map(\.bytes)), now: start)
        _ = machine.verified(records, delivery: .live, bytes: 32_000)
        let fourth = machine.stored(StoreOutcome(stored: 0, clock: clock, wasted: 1000))
        #expect(fourth.first == .send(.ack(clock)), "\(fourth)")
    }
}
